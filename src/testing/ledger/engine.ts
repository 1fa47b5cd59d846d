/**
 * The ledger engine: one state, idempotent execution (the same bytes execute once, however often
 * and however concurrently they are submitted), simulation, minting for the faucet, epochs, and
 * optional snapshots to a file.
 *
 * @module
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { transactionDigest } from '../../internal/suiSignature.js'
import { ensureChannelGenesis } from './channel.js'
import { ensureClockObject } from './clock.js'
import { type EscrowGenesis, ensureEscrowGenesis } from './escrowAdmin.js'
import { executeAccepted } from './execute.js'
import { DEFAULT_MODULES_PACKAGE, projectFunctions } from './modules.js'
import { functionTable } from './programmable.js'
import { fromSnapshot, toSnapshot } from './snapshot.js'
import {
  balanceKey,
  coinObjectType,
  createState,
  type LedgerState,
  newObjectId,
  putObject,
  type StateOptions,
  type StoredObject,
  type TransactionRecord,
} from './state.js'
import { checkSignatures, type Rejection, validateState } from './validate.js'
import type { NativeFunction } from './values.js'

const SAVE_DELAY_MS = 200

/** Result of submitting a transaction. */
export type Submission = { status: 'executed'; record: TransactionRecord } | Rejection

/** Options of the engine. */
export type EngineOptions = StateOptions & {
  /** Address of the project's package (agent registry, receipt anchor, escrow). */
  modulesPackage?: string
  /** JSON file the state is loaded from at start and saved to after each change. */
  stateFile?: string
  /**
   * Called after every change the engine commits: an executed transaction (not a replay of one
   * already executed) or a mint. Tests check ledger invariants here (see `checkSupply`).
   */
  onCommit?: ((change: LedgerChange, state: LedgerState) => void) | undefined
  /**
   * The escrow configuration a fresh ledger starts with: admin (holder of the `AdminCap`),
   * treasury and fee rate (default 500 bps). Ignored when `stateFile` already holds one.
   */
  escrow?: EscrowGenesis
  /**
   * The ledger's clock (ms since the epoch), read at each execution: what Move calls see as now.
   * Default `Date.now`. Tests move it to pass deadlines.
   */
  now?: () => number
}

/** A change the engine committed. */
export type LedgerChange =
  | { kind: 'transaction'; record: TransactionRecord }
  | { kind: 'mint'; coinType: string; amount: bigint }

/** The engine behind the gRPC server (also usable directly in tests). */
export type LedgerEngine = {
  readonly state: LedgerState
  readonly modulesPackage: string
  /** Validates, executes and commits. Executed bytes return their original record. */
  submit(txBytes: Uint8Array, signatures: string[]): Promise<Submission>
  /** Executes without committing (signatures are not required). */
  simulate(txBytes: Uint8Array): Promise<Submission>
  /** Creates a coin object, or credits an address balance, out of thin air (faucet). */
  mint(options: {
    address: string
    coinType: string
    amount: bigint
    into: 'coin' | 'addressBalance'
  }): StoredObject | undefined
  /** Starts the next epoch. */
  advanceEpoch(): void
  /**
   * Moves the clock Move calls read (`&Clock`) forward by `ms` from then on, e.g. past a channel's
   * grace period; returns the new time. Not kept in the snapshot file.
   *
   * @throws {RangeError} for a negative or fractional `ms`.
   */
  advanceClock(ms: number): number
  /** Writes the snapshot file now (no-op without `stateFile`); changes are otherwise written within 200 ms. */
  save(): void
}

/** Creates an engine, loading `stateFile` when it exists. */
export function createEngine(options: EngineOptions = {}): LedgerEngine {
  let state = createState(options)
  if (options.stateFile) {
    try {
      state = fromSnapshot(readFileSync(options.stateFile, 'utf8'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  const modulesPackage = normalizeSuiAddress(options.modulesPackage ?? DEFAULT_MODULES_PACKAGE)
  ensureClockObject(state)
  ensureEscrowGenesis(state, modulesPackage, options.escrow)
  ensureChannelGenesis(state, modulesPackage)
  const functions: ReadonlyMap<string, NativeFunction> = functionTable({
    [modulesPackage]: projectFunctions(modulesPackage, { usdcType: state.usdcType }),
  })
  const inFlight = new Map<string, Promise<Submission>>()
  // The clock Move calls read: the caller's (or the wall clock) plus what tests moved it by.
  let clockOffsetMs = 0
  const now = () => (options.now ?? Date.now)() + clockOffsetMs

  const saveNow = () => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (!options.stateFile) return
    const tmp = `${options.stateFile}.tmp`
    writeFileSync(tmp, toSnapshot(state))
    renameSync(tmp, options.stateFile)
  }
  // Changes are written at most every SAVE_DELAY_MS (a whole-state write per transaction would
  // dominate execution time); `save()` (called by `stop()`) flushes at once.
  let timer: ReturnType<typeof setTimeout> | undefined
  const save = () => {
    if (!options.stateFile || timer) return
    timer = setTimeout(saveNow, SAVE_DELAY_MS)
    timer.unref()
  }

  const run = async (
    txBytes: Uint8Array,
    signatures: string[],
    dryRun: boolean,
    digest: string | undefined,
  ): Promise<Submission> => {
    if (digest === undefined) {
      return {
        status: 'rejected',
        code: 3,
        message: 'Invalid transaction: could not deserialize TransactionData',
      }
    }
    const done = state.transactions.get(digest)
    if (done && !dryRun) return { status: 'executed', record: done }
    const signed = await checkSignatures(txBytes, signatures, { checkSignatures: !dryRun })
    if (signed.status === 'rejected') return signed
    // From here on nothing awaits: state checks, execution and commit are one atomic step.
    const committed = state.transactions.get(digest)
    if (committed && !dryRun) return { status: 'executed', record: committed }
    const accepted = validateState(state, signed.data)
    if (accepted.status === 'rejected') return accepted
    const result = executeAccepted({
      state,
      accepted,
      digest,
      txBytes,
      signatures,
      functions,
      dryRun,
      nowMs: now(),
    })
    if (!('digest' in result)) return result
    if (!dryRun) {
      save()
      options.onCommit?.({ kind: 'transaction', record: result }, state)
    }
    return { status: 'executed', record: result }
  }

  return {
    get state() {
      return state
    },
    modulesPackage,
    submit(txBytes, signatures) {
      let digest: string | undefined
      try {
        digest = transactionDigest(txBytes)
      } catch {
        digest = undefined
      }
      if (digest === undefined) return run(txBytes, signatures, false, undefined)
      const pending = inFlight.get(digest)
      if (pending) return pending
      const promise = run(txBytes, signatures, false, digest).finally(() => inFlight.delete(digest))
      inFlight.set(digest, promise)
      return promise
    },
    simulate(txBytes) {
      let digest: string | undefined
      try {
        digest = transactionDigest(txBytes)
      } catch {
        digest = undefined
      }
      return run(txBytes, [], true, digest)
    },
    mint({ address, coinType, amount, into }) {
      const owner = normalizeSuiAddress(address)
      const type = normalizeStructTag(coinType)
      if (into === 'addressBalance') {
        const key = balanceKey(owner, type)
        state.addressBalances.set(key, (state.addressBalances.get(key) ?? 0n) + amount)
        save()
        options.onCommit?.({ kind: 'mint', coinType: type, amount }, state)
        return undefined
      }
      const object = putObject(state, {
        objectId: newObjectId(state),
        version: 1n,
        owner: { kind: 'address', address: owner },
        type: coinObjectType(type),
        coin: { coinType: type, balance: amount },
        previousTransaction: 'faucet',
      })
      save()
      options.onCommit?.({ kind: 'mint', coinType: type, amount }, state)
      return object
    },
    advanceClock(ms) {
      if (!Number.isSafeInteger(ms) || ms < 0) {
        throw new RangeError('advanceClock takes a whole number of ms, 0 or more')
      }
      clockOffsetMs += ms
      return now()
    },
    advanceEpoch() {
      state.epoch += 1n
      state.epochStartMs = Date.now()
      save()
    },
    save: saveNow,
  }
}
