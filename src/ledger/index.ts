/**
 * The ledger: the only way the rest of the code touches the chain.
 *
 * @module
 */
export { createLedger, type LedgerOptions, toSettlement } from './ledger.js'
export type {
  ExecutabilityOutcome,
  ExecuteOutcome,
  Ledger,
  LedgerBalance,
  LedgerBalanceChange,
  LedgerEventRecord,
  LookupOutcome,
  MoveCallArgument,
  MoveCallRequest,
  Settlement,
  TransferRequest,
} from './types.js'
