/**
 * The shapes the rest of the code sees of the ledger: settlements, execution outcomes, look-ups.
 * They match what `src/settle.ts` and `src/refunds.ts` consume (`SettlementLedger`, `RefundLedger`).
 *
 * @module
 */

/** One balance change of an executed transaction (address and coin type normalised). */
export type LedgerBalanceChange = {
  address: string
  coinType: string
  /** Signed amount in base units. */
  amount: bigint
}

/** One event of an executed transaction. */
export type LedgerEventRecord = {
  packageId: string
  module: string
  sender: string
  eventType: string
  json: Record<string, unknown> | null
}

/** An executed transaction's effects as the ledger reports them. */
export type Settlement = {
  digest: string
  /** Whether execution succeeded. A failed transaction still charged gas. */
  success: boolean
  /** The ledger's error message when `success` is false. */
  error?: string | undefined
  sender: string
  balanceChanges: readonly LedgerBalanceChange[]
  events: readonly LedgerEventRecord[]
  checkpoint: string | null
  timestampMs: number | null
}

/** The outcome of submitting a transaction. */
export type ExecuteOutcome =
  /** Executed (successfully or not, see `transaction.success`): the effects are final. */
  | { status: 'executed'; transaction: Settlement }
  /** Refused before execution (bad signature, stale object, expired, …): nothing happened. */
  | { status: 'rejected'; reason: string }
  /** No answer (timeout, lost response, node down) and not found by digest yet: look it up later. */
  | { status: 'unknown'; reason: string; digest: string }

/** The outcome of looking a digest up. */
export type LookupOutcome =
  | { status: 'found'; transaction: Settlement }
  | { status: 'not_found' }
  | { status: 'unknown'; reason: string }

/**
 * Whether signed bytes not found on the ledger could still execute there: `possible` (their window
 * is open and the owned objects they name are at those versions), `never` (expired by the ledger's
 * epoch or clock, or an object they name has moved on), or `unknown` (the ledger did not answer).
 */
export type ExecutabilityOutcome =
  | { status: 'possible' }
  | { status: 'never'; reason: string }
  | { status: 'unknown'; reason: string }

/** A balance of one coin type: coin objects plus the address balance. */
export type LedgerBalance = { total: bigint; coinBalance: bigint; addressBalance: bigint }

/** A transfer to build or send. */
export type TransferRequest = {
  to: string
  /** Base units. */
  amount: bigint
  coinType: string
}

/**
 * An argument of a Move call: a pure value, or `{ clock: true }` for the shared `Clock` object
 * (`0x6`, by immutable reference) that the project's functions take for the time.
 */
export type MoveCallArgument =
  | { string: string }
  | { u64: bigint }
  | { address: string }
  | { clock: true }

/** One Move call to build: `<package>::<module>::<function>` with its arguments. */
export type MoveCallRequest = {
  /** `0x<64 hex>::module::function`. */
  target: string
  arguments: readonly MoveCallArgument[]
  /** Gas budget in MIST. Default 10 000 000 (0.01 SUI). */
  gasBudget?: bigint | undefined
}

/** The ledger, as every other part of the code touches it. */
export type Ledger = {
  /** Submits signed bytes. Idempotent on the ledger: re-submitting returns the same effects. */
  execute(txBytes: Uint8Array, signatures: readonly string[]): Promise<ExecuteOutcome>
  /** Looks a digest up once. */
  getTransaction(digest: string): Promise<LookupOutcome>
  /** Polls until the digest is found or `timeoutMs` (default 10 000) passes. */
  waitFor(digest: string, options?: { timeoutMs?: number }): Promise<LookupOutcome>
  getBalance(address: string, coinType: string): Promise<LedgerBalance>
  /**
   * Builds (does not sign) a transfer from `sender`: the gasless address-balance form when allowed
   * and possible (USDC, at least 0.01, remainder 0 or at least 0.01), else the coin form.
   */
  buildTransfer(request: TransferRequest & { sender: string }): Promise<Uint8Array>
  /**
   * Whether signed bytes that are not on the ledger could still execute (see
   * {@link ExecutabilityOutcome}): judged by the ledger's epoch and clock and the current versions
   * of the owned objects the bytes name.
   */
  canStillExecute(txBytes: Uint8Array): Promise<ExecutabilityOutcome>
  /**
   * Builds (does not sign) one Move call from `sender`, gas paid with its SUI coins at the
   * reference gas price (e.g. `agent_registry::register`).
   */
  buildMoveCall(request: MoveCallRequest & { sender: string }): Promise<Uint8Array>
  /** Builds, signs with the operator key and executes a transfer. Needs `operator`. */
  transfer(request: TransferRequest): Promise<ExecuteOutcome & { digest: string }>
  /** The chain identifier (cached). */
  chainIdentifier(): Promise<string>
}
