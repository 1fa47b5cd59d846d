/**
 * MPP sessions on Sui: the vouchers, the channel's id, and the transaction builders of the
 * payment channel on the ledger (docs/protocol.md, "Sessions").
 *
 * @module
 */
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
