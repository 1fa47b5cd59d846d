/**
 * What the builders of the package's Move calls share: a transaction with sender, gas price,
 * budget and SUI gas coins set, and the payer's money taken from its coins or else its address
 * balance.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { Transaction, type TransactionResult } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'

const SUI = normalizeStructTag('0x2::sui::SUI')
const MAX_COINS = 100

/** What a builder needs to start a transaction. */
export type MoveTxOptions = {
  client: ClientWithCoreApi
  /** The address that signs. */
  sender: string
  /** Gas budget in MIST. */
  gasBudget: bigint
}

/** A transaction with sender, gas price, budget and the sender's SUI coins as gas. */
export async function moveTransaction(options: MoveTxOptions): Promise<Transaction> {
  const sender = normalizeSuiAddress(options.sender)
  const budget = options.gasBudget
  const [{ referenceGasPrice }, gas] = await Promise.all([
    options.client.core.getReferenceGasPrice(),
    options.client.core.listCoins({ owner: sender, coinType: SUI, limit: MAX_COINS }),
  ])
  const coins = gas.objects.map((c) => ({
    objectId: c.objectId,
    version: c.version,
    digest: c.digest,
  }))
  const total = gas.objects.reduce((sum, c) => sum + BigInt(c.balance), 0n)
  if (total < budget) {
    throw new PaymentError('INSUFFICIENT_BALANCE', 'Not enough SUI in coins for gas.', {
      details: { needed: budget.toString() },
    })
  }
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(BigInt(referenceGasPrice))
  tx.setGasBudget(budget)
  tx.setGasPayment(coins)
  return tx
}

/**
 * Exactly `amount` of the sender's `asset`, as a `Coin` or a `Balance` argument: split from its
 * coins (largest first) when they hold enough, else redeemed from its address balance.
 *
 * @throws {PaymentError} `INSUFFICIENT_BALANCE` when neither holds enough.
 */
export async function takeFunds(
  tx: Transaction,
  options: {
    client: ClientWithCoreApi
    sender: string
    asset: string
    amount: bigint
    as: 'coin' | 'balance'
  },
) {
  const { amount } = options
  const asset = normalizeStructTag(options.asset)
  const sender = normalizeSuiAddress(options.sender)
  const { objects } = await options.client.core.listCoins({
    owner: sender,
    coinType: asset,
    limit: MAX_COINS,
  })
  const sorted = [...objects].sort((a, b) => (BigInt(b.balance) > BigInt(a.balance) ? 1 : -1))
  const picked: typeof objects = []
  let total = 0n
  for (const coin of sorted) {
    if (total >= amount) break
    picked.push(coin)
    total += BigInt(coin.balance)
  }
  if (total >= amount) {
    const [first, ...rest] = picked.map((c) =>
      tx.objectRef({ objectId: c.objectId, version: c.version, digest: c.digest }),
    )
    if (!first) throw new PaymentError('INSUFFICIENT_BALANCE', 'No coins to pay with.')
    if (rest.length > 0) tx.mergeCoins(first, rest)
    const coin = firstResult(tx.splitCoins(first, [tx.pure.u64(amount)]))
    if (options.as === 'coin') return coin
    return firstResult(
      tx.moveCall({ target: '0x2::coin::into_balance', typeArguments: [asset], arguments: [coin] }),
    )
  }
  const { balance } = await options.client.core.getBalance({ owner: sender, coinType: asset })
  if (BigInt(balance.addressBalance) < amount) {
    throw new PaymentError('INSUFFICIENT_BALANCE', `Not enough ${asset} to pay ${amount}.`, {
      details: { needed: amount.toString() },
    })
  }
  return firstResult(
    tx.moveCall({
      target: options.as === 'coin' ? '0x2::coin::redeem_funds' : '0x2::balance::redeem_funds',
      typeArguments: [asset],
      arguments: [tx.withdrawal({ amount, type: asset })],
    }),
  )
}

/** The first value a command returns (a split's coin, a redeemed coin), as its `NestedResult`. */
export function firstResult(result: TransactionResult) {
  const [first] = result
  if (first === undefined) throw new TypeError('the command returns no value')
  return first
}
