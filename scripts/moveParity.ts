/**
 * Reads the interface of a Move package from its sources (public and entry functions, structs,
 * `E*` abort codes) with the tree-sitter grammar that `@mysten/prettier-plugin-move` ships, and
 * compares it with the emulator's declared signatures (`moduleFunctions`, `moduleStructs`,
 * `moduleAborts` from `tollgate/testing`). `scripts/moveParity.test.ts` runs it on `move/tollgate`
 * and on the deliberate mismatch in `move/fixtures/mismatch`.
 *
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type {
  MoveAbortCode,
  MoveField,
  MoveFunctionSignature,
  MoveStructSignature,
} from 'tollgate/testing'
import { Language, type Node, Parser } from 'web-tree-sitter'

/** What a package exposes: the same shapes as the declared table. */
export type MoveInterface = {
  functions: MoveFunctionSignature[]
  structs: MoveStructSignature[]
  aborts: MoveAbortCode[]
}

/** The Move parser (the grammar of `@mysten/prettier-plugin-move`). */
async function moveParser(): Promise<Parser> {
  await Parser.init()
  const wasm = createRequire(import.meta.url).resolve(
    '@mysten/prettier-plugin-move/tree-sitter-move.wasm',
  )
  const created = new Parser()
  created.setLanguage(await Language.load(wasm))
  return created
}

/** A type as written, with the whitespace made canonical (`&mut  Job` → `&mut Job`, `A< B >` → `A<B>`). */
export function canonicalType(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\s*([<>,()])\s*/g, '$1')
    .replace(/,/g, ', ')
    .trim()
}

const skipped = new Set(['line_comment', 'block_comment', 'newline', ';'])

/** The items of a module body, each with the annotations (`#[test_only]`, …) written before it. */
function items(body: Node): { node: Node; annotations: string[] }[] {
  const found: { node: Node; annotations: string[] }[] = []
  let annotations: string[] = []
  for (const child of body.children) {
    if (skipped.has(child.type)) continue
    if (child.type === 'annotation') {
      annotations.push(child.text)
      continue
    }
    found.push({ node: child, annotations })
    annotations = []
  }
  return found
}

const testOnly = (annotations: string[]) =>
  annotations.some((a) => /\b(test_only|test|random_test)\b/.test(a))

function fieldsOf(node: Node | null, nameField: string): MoveField[] {
  if (node === null) return []
  return node.namedChildren
    .filter((c) => c.type === 'field_annotation' || c.type === 'function_parameter')
    .map((c) => {
      const name = c.childForFieldName(nameField) ?? c.namedChildren[0]
      const type = c.childForFieldName('type') ?? c.namedChildren[c.namedChildren.length - 1]
      return { name: name?.text ?? '', type: canonicalType(type?.text ?? '') }
    })
}

function functionOf(module: string, node: Node): MoveFunctionSignature | undefined {
  const modifiers = node.children.filter((c) => c.type === 'modifier').map((c) => c.text.trim())
  if (!modifiers.some((m) => m === 'public' || m === 'entry')) return undefined
  const name = node.children.find((c) => c.type === 'function_identifier')?.text ?? ''
  const typeParams = node.children.find((c) => c.type === 'type_parameters')
  const parameters = node.children.find((c) => c.type === 'function_parameters')
  return {
    module,
    name,
    typeParameters: (typeParams?.namedChildren ?? [])
      .filter((c) => c.type === 'type_parameter')
      .map((c) => canonicalType(c.text)),
    parameters: parameters
      ? parameters.namedChildren
          .filter((c) => c.type === 'function_parameter')
          .map((c) => {
            const [first] = c.namedChildren
            const last = c.namedChildren[c.namedChildren.length - 1]
            return { name: first?.text ?? '', type: canonicalType(last?.text ?? '') }
          })
      : [],
  }
}

function structOf(module: string, node: Node): MoveStructSignature {
  const name = node.childForFieldName('name')?.text ?? ''
  const abilities = (node.childForFieldName('ability_declarations')?.namedChildren ?? [])
    .filter((c) => c.type === 'ability')
    .map((c) => c.text)
  const named = node
    .childForFieldName('struct_fields')
    ?.namedChildren.find((c) => c.type === 'named_fields')
  return {
    module,
    name,
    kind: abilities.includes('key') ? 'object' : 'event',
    abilities,
    fields: fieldsOf(named ?? null, 'field'),
  }
}

function abortOf(module: string, node: Node): MoveAbortCode | undefined {
  const name = node.childForFieldName('name')?.text ?? ''
  const value = node.childForFieldName('expr')?.text.replace(/_/g, '').replace(/u64$/, '')
  if (!/^E[A-Z0-9_]*$|^E[A-Z][A-Za-z0-9]*$/.test(name) || value === undefined) return undefined
  if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(value)) return undefined
  return { module, name, code: BigInt(value), when: '' }
}

/** Reads Move interfaces; one parser, loaded when the reader is created. */
export type MoveReader = {
  /** The interface of one Move source text (every module in it). Throws on a syntax error. */
  readSource(source: string, file?: string): MoveInterface
  /** The interface of the package at `dir`: every `sources/**\/*.move` (tests excluded). */
  readPackage(dir: string): MoveInterface
}

/**
 * Creates a {@link MoveReader}.
 *
 * @example
 * const move = (await createMoveReader()).readPackage('move/tollgate')
 */
export async function createMoveReader(): Promise<MoveReader> {
  const parser = await moveParser()
  const readSource = (source: string, file = 'source'): MoveInterface => {
    const tree = parser.parse(source)
    if (!tree) throw new Error(`${file}: not parsed`)
    if (tree.rootNode.hasError) throw new Error(`${file}: Move syntax error`)
    const result: MoveInterface = { functions: [], structs: [], aborts: [] }
    for (const definition of tree.rootNode.namedChildren) {
      if (definition.type !== 'module_definition') continue
      const module =
        definition.childForFieldName('module_identity')?.childForFieldName('module')?.text ?? ''
      const body = definition.childForFieldName('module_body')
      if (!body) continue
      for (const { node, annotations } of items(body)) {
        if (testOnly(annotations)) continue
        if (node.type === 'function_definition') {
          const fn = functionOf(module, node)
          if (fn) result.functions.push(fn)
        } else if (node.type === 'struct_definition') {
          result.structs.push(structOf(module, node))
        } else if (node.type === 'constant') {
          const code = abortOf(module, node)
          if (code) result.aborts.push(code)
        }
      }
    }
    return result
  }
  const readPackage = (dir: string): MoveInterface => {
    const result: MoveInterface = { functions: [], structs: [], aborts: [] }
    const sources = join(dir, 'sources')
    const files = readdirSync(sources, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.move'))
      .sort()
    for (const file of files) {
      const one = readSource(readFileSync(join(sources, file), 'utf8'), file)
      result.functions.push(...one.functions)
      result.structs.push(...one.structs)
      result.aborts.push(...one.aborts)
    }
    return result
  }
  return { readSource, readPackage }
}

const fieldList = (fields: readonly MoveField[]) =>
  `(${fields.map((f) => `${f.name}: ${f.type}`).join(', ')})`

/**
 * Every difference between the declared interface and the one read from Move, one line each
 * (empty when they agree). Only the modules in `modules` are compared (default: every module of
 * either side).
 */
export function compareInterfaces(
  declared: MoveInterface,
  move: MoveInterface,
  modules?: readonly string[],
): string[] {
  const inScope = (module: string) => modules === undefined || modules.includes(module)
  const differences: string[] = []
  const pair = <T extends { module: string; name: string }>(
    what: string,
    left: readonly T[],
    right: readonly T[],
    compare: (a: T, b: T) => string[],
  ) => {
    const key = (x: T) => `${x.module}::${x.name}`
    const rights = new Map(right.filter((x) => inScope(x.module)).map((x) => [key(x), x]))
    for (const a of left.filter((x) => inScope(x.module))) {
      const b = rights.get(key(a))
      rights.delete(key(a))
      if (b === undefined) differences.push(`${what} ${key(a)}: declared, not in the Move source`)
      else differences.push(...compare(a, b).map((d) => `${what} ${key(a)}: ${d}`))
    }
    for (const b of rights.values()) {
      differences.push(`${what} ${key(b)}: in the Move source, not declared`)
    }
  }
  pair('function', declared.functions, move.functions, (a, b) => {
    const found: string[] = []
    if (a.typeParameters.join(', ') !== b.typeParameters.join(', ')) {
      found.push(
        `type parameters <${a.typeParameters.join(', ')}> ≠ <${b.typeParameters.join(', ')}>`,
      )
    }
    if (fieldList(a.parameters) !== fieldList(b.parameters)) {
      found.push(`parameters ${fieldList(a.parameters)} ≠ ${fieldList(b.parameters)}`)
    }
    return found
  })
  pair('struct', declared.structs, move.structs, (a, b) => {
    const found: string[] = []
    const abilities = (s: MoveStructSignature) => [...s.abilities].sort().join(', ')
    if (abilities(a) !== abilities(b)) found.push(`abilities ${abilities(a)} ≠ ${abilities(b)}`)
    if (fieldList(a.fields) !== fieldList(b.fields)) {
      found.push(`fields ${fieldList(a.fields)} ≠ ${fieldList(b.fields)}`)
    }
    return found
  })
  pair('abort', declared.aborts, move.aborts, (a, b) =>
    a.code === b.code ? [] : [`code ${a.code} ≠ ${b.code}`],
  )
  return differences
}
