/**
 * Builds transfers offline from what the core API reports (coins, address balance, gas price,
 * epoch): the gasless address-balance form for USDC when possible, else the coin form.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'

const SUI = normalizeStructTag('0x2::sui::SUI')
/** Minimum gasless transfer and remainder (0.01 USDC). */
const GASLESS_MINIMUM = 10_000n
/** Gas budget of a coin-form transfer (0.01 SUI). */
const COIN_FORM_BUDGET = 10_000_000n
const MAX_COINS = 100

/** Builds the transfer bytes (unsigned). */
export async function buildTransfer(
  client: ClientWithCoreApi,
  request: {
    sender: string
    to: string
    amount: bigint
    coinType: string
    usdcType: string
    allowGasless: boolean
    chainId: Promise<string>
  },
): Promise<Uint8Array> {
  const sender = normalizeSuiAddress(request.sender)
  const to = normalizeSuiAddress(request.to)
  const coinType = normalizeStructTag(request.coinType)
  if (request.amount <= 0n)
    throw new PaymentError('invalid_amount', 'A transfer amount must be positive.')

  const { balance } = await client.core.getBalance({ owner: sender, coinType })
  const addressBalance = BigInt(balance.addressBalance)
  const remainder = addressBalance - request.amount
  if (
    request.allowGasless &&
    coinType === request.usdcType &&
    request.amount >= GASLESS_MINIMUM &&
    remainder >= 0n &&
    (remainder === 0n || remainder >= GASLESS_MINIMUM)
  ) {
    const [{ systemState }, chain] = await Promise.all([
      client.core.getCurrentSystemState(),
      request.chainId,
    ])
    const epoch = BigInt(systemState.epoch)
    const tx = new Transaction()
    tx.setSender(sender)
    tx.setGasPrice(0)
    tx.setGasBudget(0)
    tx.setGasPayment([])
    tx.setExpiration({
      ValidDuring: {
        minEpoch: String(epoch),
        maxEpoch: String(epoch + 1n),
        minTimestamp: null,
        maxTimestamp: null,
        chain,
        nonce: (Math.random() * 0x100000000) >>> 0,
      },
    })
    const [funds] = tx.moveCall({
      target: '0x2::balance::redeem_funds',
      typeArguments: [coinType],
      arguments: [tx.withdrawal({ amount: request.amount, type: coinType })],
    })
    tx.moveCall({
      target: '0x2::balance::send_funds',
      typeArguments: [coinType],
      arguments: [funds!, tx.pure.address(to)],
    })
    return tx.build()
  }

  const [{ referenceGasPrice }, gas] = await Promise.all([
    client.core.getReferenceGasPrice(),
    client.core.listCoins({ owner: sender, coinType: SUI, limit: MAX_COINS }),
  ])
  const gasCoins = gas.objects.map((c) => ({
    objectId: c.objectId,
    version: c.version,
    digest: c.digest,
    balance: BigInt(c.balance),
  }))
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(BigInt(referenceGasPrice))
  tx.setGasBudget(COIN_FORM_BUDGET)
  if (coinType === SUI) {
    const total = gasCoins.reduce((sum, c) => sum + c.balance, 0n)
    if (total < request.amount + COIN_FORM_BUDGET) {
      throw new PaymentError(
        'INSUFFICIENT_BALANCE',
        'Not enough SUI in coins for the transfer and its gas.',
      )
    }
    tx.setGasPayment(gasCoins)
    const [coin] = tx.splitCoins(tx.gas, [tx.pure.u64(request.amount)])
    tx.transferObjects([coin!], tx.pure.address(to))
    return tx.build()
  }
  if (gasCoins.reduce((sum, c) => sum + c.balance, 0n) < COIN_FORM_BUDGET) {
    throw new PaymentError('INSUFFICIENT_BALANCE', 'Not enough SUI for gas.')
  }
  tx.setGasPayment(gasCoins)
  const { objects } = await client.core.listCoins({ owner: sender, coinType, limit: MAX_COINS })
  const picked: typeof objects = []
  let total = 0n
  for (const coin of [...objects].sort((a, b) =>
    BigInt(b.balance) > BigInt(a.balance) ? 1 : -1,
  )) {
    if (total >= request.amount) break
    picked.push(coin)
    total += BigInt(coin.balance)
  }
  const [first, ...rest] = picked.map((c) =>
    tx.objectRef({ objectId: c.objectId, version: c.version, digest: c.digest }),
  )
  if (!first || total < request.amount) {
    throw new PaymentError(
      'INSUFFICIENT_BALANCE',
      'Not enough coins of this type for the transfer.',
    )
  }
  if (rest.length > 0) tx.mergeCoins(first, rest)
  const [coin] = tx.splitCoins(first, [tx.pure.u64(request.amount)])
  tx.transferObjects([coin!], tx.pure.address(to))
  return tx.build()
}
