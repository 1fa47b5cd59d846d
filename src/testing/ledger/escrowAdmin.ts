/**
 * The escrow module's configuration on the local ledger: the shared `EscrowConfig` (fee rate,
 * treasury) and the admin's `AdminCap`, created when a ledger starts (as the module's `init` does
 * at publish), and `escrow::set_fee`, by which the admin changes the rate of jobs funded afterwards.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { declaredNative, eventBcs } from './bind.js'
import { BPS, EscrowAbort, hashId } from './escrow.js'
import { type LedgerState, putObject } from './state.js'
import { abort, ErrorKind, fail, type NativeFunction, readU64 } from './values.js'

/** The fee rate a fresh ledger starts with, in basis points (5 %). */
export const DEFAULT_ESCROW_FEE_BPS = 500n
/** The default treasury and admin of a fresh ledger ("7ea5" treasury); nobody holds its key. */
export const DEFAULT_ESCROW_TREASURY = normalizeSuiAddress('0x7ea5')
/** Options of the escrow configuration a fresh ledger is created with. */
export type EscrowGenesis = {
  /** Address that receives the `AdminCap` (changes the fee). Default {@link DEFAULT_ESCROW_TREASURY}. */
  admin?: string
  /** Address the fees are paid to. Default {@link DEFAULT_ESCROW_TREASURY}. */
  treasury?: string
  /** Initial fee rate in basis points. Default 500 (5 %). */
  feeBps?: bigint
}

/** The id of the `EscrowConfig` object of package `pkg` (fixed, like an id created at publish). */
export function escrowConfigId(pkg: string): string {
  return hashId(`${normalizeSuiAddress(pkg)}::escrow::EscrowConfig`)
}

/** The id of the `AdminCap` of package `pkg`. */
export function escrowAdminCapId(pkg: string): string {
  return hashId(`${normalizeSuiAddress(pkg)}::escrow::AdminCap`)
}

/**
 * Creates the package's `EscrowConfig` (shared) and `AdminCap` (owned by the admin) when the state
 * has none yet, as the module's `init` does at publish.
 */
export function ensureEscrowGenesis(
  state: LedgerState,
  pkg: string,
  genesis: EscrowGenesis = {},
): void {
  const configId = escrowConfigId(pkg)
  if (state.objects.has(configId)) return
  const feeBps = genesis.feeBps ?? DEFAULT_ESCROW_FEE_BPS
  if (feeBps < 0n || feeBps > BPS) throw new Error('escrow feeBps must be within 0..10000')
  const admin = normalizeSuiAddress(genesis.admin ?? DEFAULT_ESCROW_TREASURY)
  putObject(state, {
    objectId: configId,
    version: 1n,
    owner: { kind: 'shared', initialVersion: 1n },
    type: `${normalizeSuiAddress(pkg)}::escrow::EscrowConfig`,
    fields: {
      id: configId,
      fee_bps: feeBps.toString(),
      treasury: normalizeSuiAddress(genesis.treasury ?? DEFAULT_ESCROW_TREASURY),
    },
    previousTransaction: 'genesis',
  })
  putObject(state, {
    objectId: escrowAdminCapId(pkg),
    version: 1n,
    owner: { kind: 'address', address: admin },
    type: `${normalizeSuiAddress(pkg)}::escrow::AdminCap`,
    fields: { id: escrowAdminCapId(pkg), config: configId },
    previousTransaction: 'genesis',
  })
}

/** The admin's native functions of the `escrow` module, keyed `escrow::function`. */
export function escrowAdminFunctions(pkg: string): Record<string, NativeFunction> {
  const configType = `${normalizeSuiAddress(pkg)}::escrow::EscrowConfig`
  const capType = `${normalizeSuiAddress(pkg)}::escrow::AdminCap`
  const stop = (code: bigint, why: string): never =>
    abort(
      { package: pkg, module: 'escrow', functionName: 'set_fee' },
      code,
      `escrow::set_fee: ${why}`,
    )
  return Object.fromEntries([
    declaredNative('escrow', 'set_fee', (args, _t, ctx) => {
      const cap = args.cap
      if (cap?.kind !== 'object' || !cap.alive || cap.object.type !== capType) {
        fail(ErrorKind.commandArgumentError, 'expected the AdminCap', ctx.command)
      }
      const config = args.config
      if (config?.kind !== 'object' || !config.alive || config.object.type !== configType) {
        fail(ErrorKind.commandArgumentError, 'expected the EscrowConfig', ctx.command)
      }
      if (config.shared && !config.shared.mutable) {
        stop(EscrowAbort.readOnly, 'the config must be passed by mutable reference')
      }
      const feeBps = readU64(args.fee_bps, ctx.command)
      if ((cap.object.fields as { config?: unknown }).config !== config.object.objectId) {
        stop(EscrowAbort.notAdmin, 'the AdminCap is not for this config')
      }
      if (feeBps > BPS) stop(EscrowAbort.badFee, 'the fee is at most 10000 bps')
      const old = BigInt(String((config.object.fields as { fee_bps?: unknown }).fee_bps ?? 0))
      const updated = { ...config.object.fields, fee_bps: feeBps.toString() }
      ctx.writeRecord({
        objectId: config.object.objectId,
        type: configType,
        owner: '',
        shared: true,
        fields: updated,
      })
      config.object = { ...config.object, fields: updated }
      ctx.emit({
        packageId: pkg,
        module: 'escrow',
        eventType: `${normalizeSuiAddress(pkg)}::escrow::FeeChanged`,
        json: { old_bps: old.toString(), new_bps: feeBps.toString() },
        bcs: eventBcs('escrow', 'FeeChanged', { old_bps: old, new_bps: feeBps }),
      })
      return []
    }),
  ])
}
