/**
 * Native handlers for the project's own Move packages, with the call signatures the real packages
 * take (see docs/ledger-modules.md): the agent identity registry, the receipt anchor and escrow jobs
 * (in `escrow.ts`).
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { escrowFunctions } from './escrow.js'
import { escrowAdminFunctions } from './escrowAdmin.js'
import { MAINNET_USDC_TYPE } from './state.js'
import { abort, type NativeFunction, readString, readU64 } from './values.js'

/** Default address of the project's package on the local ledger ("7011 6a7e": tollgate). */
export const DEFAULT_MODULES_PACKAGE = normalizeSuiAddress('0x70116a7e')

const ReceiptAnchoredBcs = bcs.struct('ReceiptAnchored', {
  receipt_id: bcs.string(),
  wire_hash: bcs.string(),
  workload_id: bcs.string(),
  served_at_ms: bcs.u64(),
  gateway_receipt_hash: bcs.string(),
  anchored_at_ms: bcs.u64(),
  anchored_by: bcs.Address,
})

const AgentRegisteredBcs = bcs.struct('AgentRegistered', {
  agent: bcs.Address,
  name: bcs.string(),
  metadata_uri: bcs.string(),
  registered_at_ms: bcs.u64(),
})

/** Upper bound on each string argument, in bytes (a real package would enforce one too). */
const MAX_FIELD = 1024
const ETOO_LONG = 1n

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
        ETOO_LONG,
        `${module}::${fn}: argument longer than ${MAX_FIELD} bytes`,
      )
    }
  }
  return {
    'agent_registry::register': (args, _t, ctx) => {
      const name = readString(args[0], ctx.command)
      const metadataUri = readString(args[1], ctx.command)
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
      ctx.writeRecord({
        ...(existing ? { objectId: existing.objectId } : {}),
        type,
        owner: ctx.sender,
        fields,
      })
      ctx.emit({
        packageId: pkg,
        module: 'agent_registry',
        eventType: `${pkg}::agent_registry::AgentRegistered`,
        json: fields,
        bcs: AgentRegisteredBcs.serialize({
          agent: ctx.sender,
          name,
          metadata_uri: metadataUri,
          registered_at_ms: BigInt(ctx.nowMs),
        }).toBytes(),
      })
      return []
    },
    'receipt_anchor::anchor_receipt': (args, _t, ctx) => {
      const receiptId = readString(args[0], ctx.command)
      const wireHash = readString(args[1], ctx.command)
      const workloadId = readString(args[2], ctx.command)
      const servedAtMs = readU64(args[3], ctx.command)
      const gatewayReceiptHash = readString(args[4], ctx.command)
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
        bcs: ReceiptAnchoredBcs.serialize(event).toBytes(),
      })
      return []
    },
    ...escrowFunctions(pkg, { usdcType: options.usdcType ?? MAINNET_USDC_TYPE }),
    ...escrowAdminFunctions(pkg),
  }
}
