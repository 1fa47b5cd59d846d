/**
 * A session channel's cooperative close, by its seller (docs/protocol.md §7).
 *
 * @module
 * @internal
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { fromHex } from '@mysten/sui/utils'
import { isPaymentError, PaymentError } from '../errors.js'
import type { ChannelRecord, ChannelStore } from '../session/channelStore.js'
import { buildClose, readChannel } from '../session/channelTx.js'
import type { ChannelSettlement } from '../session/settler.js'
import type { SettlementResult } from '../settle.js'
import { type CallBooks, refuse } from './sessionBooks.js'
import type { SellerChannels, SessionPayload } from './sessionChannels.js'

/** What a close needs of its session method. */
export type CloseContext = {
  readonly client: ClientWithCoreApi
  /** The payee's key (or the channel's operator's): signs the close. */
  readonly signer: Signer
  readonly store: ChannelStore
  readonly packageId: string
  readonly seller: string
  readonly channels: SellerChannels
  readonly receipt: CallBooks['receipt']
  readonly answered: CallBooks['answered']
  readonly onSettled: ((settlement: ChannelSettlement) => void) | undefined
}

/**
 * A cooperative close (a buyer's `close` credential, on a bare request): its voucher taken, then
 * the channel closed on the ledger with the seller's key, capturing what was spent (never more)
 * and refunding the rest; refused while calls on the channel are still running.
 */
export async function closeChannel(
  context: CloseContext,
  channel: ChannelRecord,
  p: Extract<SessionPayload, { action: 'close' }>,
  challengeId: string,
): Promise<SettlementResult> {
  const { client, signer, store, packageId, seller, channels, receipt, answered } = context
  const taken = await channels.takeVoucher(channel, p.cumulativeAmount, p.signature)
  if (isPaymentError(taken)) return refuse(taken)
  const current = taken.channel
  if (current.held > 0n) {
    return refuse(
      new PaymentError('settlement_pending', 'Calls on this channel are still running.', {
        details: { channelId: current.channelId },
      }),
    )
  }
  // What was spent, or what is settled already if more (a settlement can never be undone).
  let capture = current.spent
  if (current.settled > capture) capture = current.settled
  const state = await readChannel(client, current.channelId)
  const tx = await buildClose({
    client,
    package: packageId,
    sender: seller,
    channel: state,
    capture,
    ...(capture > state.settled
      ? {
          voucher: {
            channelId: current.channelId,
            cumulativeAmount: current.highest,
            signature: fromHex(current.highestSignature),
          },
        }
      : {}),
  })
  const bytes = await tx.build({ client })
  const { signature } = await signer.signTransaction(bytes)
  const result = await client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
    include: { effects: true },
  })
  if (result.$kind !== 'Transaction') {
    return refuse(new PaymentError('settlement_failed', 'The ledger refused to close the channel.'))
  }
  const closed = await store.observe(current.channelId, { settled: capture, state: 'closed' })
  channels.forget(current.channelId)
  if (capture > state.settled) {
    context.onSettled?.({
      channelId: current.channelId,
      payer: current.payer,
      settled: capture,
      amount: capture - state.settled,
      digest: result.Transaction.digest,
      trigger: 'close',
    })
  }
  return answered(receipt(challengeId, closed ?? current, { txHash: result.Transaction.digest }))
}
