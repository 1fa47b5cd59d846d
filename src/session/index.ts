/**
 * MPP sessions on Sui: the vouchers, the channel's id, the transaction builders of the payment
 * channel on the ledger, and the stores of a seller's channel books (docs/protocol.md, "Sessions").
 * The seller's payment method is `Methods.createSessionMethod`.
 *
 * @module
 */

export {
  type ChannelPhase,
  type ChannelRecord,
  type ChannelStore,
  createMemoryChannelStore,
  type HoldOutcome,
  type HoldPart,
  type HoldRequest,
  type HoldResult,
  type OpenedChannel,
  type SpendResult,
  type VoucherAcceptance,
} from './channelStore.js'
export type { ChannelTables } from './channelTables.js'
export {
  buildClose,
  buildOpen,
  buildRequestClose,
  buildSettle,
  buildTopUp,
  buildWithdraw,
  type ChannelRef,
  type ChannelState,
  type ChannelTxOptions,
  channelGasBudget,
  minGraceMs,
  readChannel,
} from './channelTx.js'
export {
  type HeldUnit,
  type MeteredEvent,
  type MeterOptions,
  type MeterStop,
  meterBatches,
  meterStream,
} from './meter.js'
export {
  createPostgresChannelStore,
  type PostgresChannelStoreOptions,
} from './postgresChannelStore.js'
export {
  type ChannelSettlement,
  createSessionSettler,
  type SessionSettler,
  type SessionSettlerOptions,
  type SettlementSchedule,
} from './settler.js'
export { createSqliteChannelStore, type SqliteChannelStoreOptions } from './sqliteChannelStore.js'
export {
  formatMeteredEvent,
  isUnitEvent,
  type SseSplitter,
  sseEvents,
  sseFields,
  sseSplitter,
} from './sse.js'
export {
  type ChannelIdentity,
  channelIdOf,
  maxChannelAmount,
  signVoucher,
  type Voucher,
  type VoucherSigner,
  verifyVoucher,
  voucherDomain,
  voucherMessage,
} from './voucher.js'
export { sessionReceiptSchema, sessionRequestSchema } from './wire.js'
