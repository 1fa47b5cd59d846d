/**
 * How the emulator's native handlers use the declared signatures of `signatures.ts`: arguments
 * bound by parameter name, the `Clock` parameter checked, event BCS encoded from the declared
 * fields.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { CLOCK_OBJECT_TYPE } from './clock.js'
import {
  type MoveFunctionSignature,
  passedParameters,
  signatureOf,
  structOf,
} from './signatures.js'
import {
  type CallContext,
  ErrorKind,
  fail,
  type NativeFunction,
  type ObjectValue,
  type Value,
} from './values.js'

/**
 * A native call's arguments by parameter name, as the declared signature orders them. Fails like
 * Sui (arity mismatch) when the transaction passes more or fewer arguments, and checks that a
 * `&Clock` parameter receives the `Clock` object.
 */
export function bindArguments(
  signature: MoveFunctionSignature,
  args: readonly Value[],
  command: number,
): Record<string, Value> {
  const params = passedParameters(signature)
  if (args.length !== params.length) {
    fail(
      ErrorKind.arityMismatch,
      `${signature.module}::${signature.name} takes ${params.length} arguments, got ${args.length}`,
      command,
    )
  }
  const bound: Record<string, Value> = {}
  params.forEach((param, i) => {
    const value = args[i] as Value
    if (param.type === '&Clock' && !isClock(value)) {
      fail(ErrorKind.commandArgumentError, `${param.name} must be the Clock object 0x6`, command)
    }
    bound[param.name] = value
  })
  return bound
}

/** A handler that reads its arguments by the declared parameter names. */
type BoundHandler = (args: Record<string, Value>, typeArgs: string[], ctx: CallContext) => Value[]

/**
 * The native function `module::name`, keyed as the function table wants it: checks the number of
 * type arguments and binds the arguments by {@link bindArguments} before calling `handler`.
 */
export function declaredNative(
  module: string,
  name: string,
  handler: BoundHandler,
): [string, NativeFunction] {
  const signature = signatureOf(module, name)
  return [
    `${module}::${name}`,
    (args, typeArgs, ctx) => {
      if (typeArgs.length !== signature.typeParameters.length) {
        fail(
          ErrorKind.typeArityMismatch,
          `${module}::${name} takes ${signature.typeParameters.length} type arguments, got ${typeArgs.length}`,
          ctx.command,
        )
      }
      return handler(bindArguments(signature, args, ctx.command), typeArgs, ctx)
    },
  ]
}

function isClock(value: Value): value is ObjectValue {
  return value.kind === 'object' && value.alive && value.object.type === CLOCK_OBJECT_TYPE
}

function fieldBytes(type: string, value: string | bigint | undefined, what: string): Uint8Array {
  if (value === undefined) throw new Error(`no value for event field ${what}`)
  if (type === 'u64') return bcs.u64().serialize(BigInt(value)).toBytes()
  if (type === 'address' || type === 'ID') return bcs.Address.serialize(String(value)).toBytes()
  if (type === 'String') return bcs.string().serialize(String(value)).toBytes()
  throw new Error(`no BCS for event field type ${type}`)
}

/**
 * The BCS bytes of event `module::name` with `values` (by field name): a struct's BCS is its fields'
 * BCS in the declared order.
 */
export function eventBcs(
  module: string,
  name: string,
  values: Record<string, string | bigint>,
): Uint8Array {
  const parts = structOf(module, name).fields.map((f) =>
    fieldBytes(f.type, values[f.name], `${name}.${f.name}`),
  )
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    bytes.set(part, offset)
    offset += part.length
  }
  return bytes
}
