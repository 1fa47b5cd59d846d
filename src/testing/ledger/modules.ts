/**
 * Native handlers for the project's own Move package (`move/tollgate`), bound to the call signatures
 * declared in `signatures.ts` (see docs/ledger-modules.md): the agent identity registry, the receipt anchor, escrow jobs
 * (in `escrow.ts`) and session channels (in `channel.ts`).
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { declaredNative, eventBcs } from './bind.js'
import { channelFunctions } from './channel.js'
import { escrowFunctions, hashId } from './escrow.js'
import { escrowAdminFunctions } from './escrowAdmin.js'
import { ETOO_LONG_FIELD } from './signatures.js'
import { MAINNET_USDC_TYPE } from './state.js'
import { abort, type NativeFunction, readString, readU64 } from './values.js'

/** Default address of the project's package on the local ledger ("7011 6a7e": tollgate). */
export const DEFAULT_MODULES_PACKAGE = normalizeSuiAddress('0x70116a7e')

/** Upper bound on each string argument, in bytes (a real package would enforce one too). */
const MAX_FIELD = 1024

/**
 * The native functions of the project's package, keyed `module::function`.
 *
 * @param options.usdcType - the coin type escrow jobs lock (default mainnet USDC).
 */
export function projectFunctions(
  pkg: string,
  options: { usdcType?: string } = {},
): Record<string, NativeFunction> {
  const where = (module: string, functionName: string) => ({ package: pkg, module, functionName })
  const checkLength = (value: string, module: string, fn: string) => {
    if (new TextEncoder().encode(value).length > MAX_FIELD) {
      abort(
        where(module, fn),
        ETOO_LONG_FIELD,
        `${module}::${fn}: argument longer than ${MAX_FIELD} bytes`,
      )
    }
  }
  return {
    ...Object.fromEntries([
      declaredNative('agent_registry', 'register', (args, _t, ctx) => {
        const name = readString(args.name, ctx.command)
        const metadataUri = readString(args.metadata_uri, ctx.command)
        checkLength(name, 'agent_registry', 'register')
        checkLength(metadataUri, 'agent_registry', 'register')
        const type = `${pkg}::agent_registry::AgentRecord`
        const existing = ctx.findRecord(ctx.sender, type)
        const fields = {
          agent: ctx.sender,
          name,
          metadata_uri: metadataUri,
          registered_at_ms: String(ctx.nowMs),
        }
        // A new record's id is derived from the transaction, as `object::new` derives one.
        const objectId =
          existing?.objectId ?? hashId(`${ctx.digest}/${ctx.command}/agent_registry::AgentRecord`)
        ctx.writeRecord({ objectId, type, owner: ctx.sender, fields: { id: objectId, ...fields } })
        ctx.emit({
          packageId: pkg,
          module: 'agent_registry',
          eventType: `${pkg}::agent_registry::AgentRegistered`,
          json: fields,
          bcs: eventBcs('agent_registry', 'AgentRegistered', {
            agent: ctx.sender,
            name,
            metadata_uri: metadataUri,
            registered_at_ms: BigInt(ctx.nowMs),
          }),
        })
        return []
      }),
      declaredNative('receipt_anchor', 'anchor_receipt', (args, _t, ctx) => {
        const receiptId = readString(args.receipt_id, ctx.command)
        const wireHash = readString(args.wire_hash, ctx.command)
        const workloadId = readString(args.workload_id, ctx.command)
        const servedAtMs = readU64(args.served_at_ms, ctx.command)
        const gatewayReceiptHash = readString(args.gateway_receipt_hash, ctx.command)
        for (const value of [receiptId, wireHash, workloadId, gatewayReceiptHash]) {
          checkLength(value, 'receipt_anchor', 'anchor_receipt')
        }
        const event = {
          receipt_id: receiptId,
          wire_hash: wireHash,
          workload_id: workloadId,
          served_at_ms: servedAtMs,
          gateway_receipt_hash: gatewayReceiptHash,
          anchored_at_ms: BigInt(ctx.nowMs),
          anchored_by: ctx.sender,
        }
        ctx.emit({
          packageId: pkg,
          module: 'receipt_anchor',
          eventType: `${pkg}::receipt_anchor::ReceiptAnchored`,
          json: { ...event, served_at_ms: String(servedAtMs), anchored_at_ms: String(ctx.nowMs) },
          bcs: eventBcs('receipt_anchor', 'ReceiptAnchored', event),
        })
        return []
      }),
    ]),
    ...escrowFunctions(pkg, { usdcType: options.usdcType ?? MAINNET_USDC_TYPE }),
    ...escrowAdminFunctions(pkg),
    ...channelFunctions(pkg),
  }
}
