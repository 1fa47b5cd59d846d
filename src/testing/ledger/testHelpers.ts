/**
 * Transaction builders shared by the ledger's integration tests and benchmark (not exported).
 *
 * @module
 */
import type { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { SUI_TYPE } from './state.js'

type Ref = { objectId: string; version: string; digest: string }

/** The owner's coins of a type, as refs. */
export async function coinRefs(
  client: SuiGrpcClient,
  owner: string,
  coinType: string,
): Promise<(Ref & { balance: bigint })[]> {
  const { objects } = await client.core.listCoins({ owner, coinType })
  return objects.map((c) => ({
    objectId: c.objectId,
    version: c.version,
    digest: c.digest,
    balance: BigInt(c.balance),
  }))
}

/** Coin form: SplitCoins(payment coin, [amount]) + TransferObjects, gas from the payer or a sponsor. */
export async function buildCoinTransfer(options: {
  client: SuiGrpcClient
  payer: Ed25519Keypair
  to: string
  amount: bigint
  coinType: string
  sponsor?: Ed25519Keypair
  coin?: Ref
  gas?: Ref[]
  gasBudget?: bigint
}): Promise<Uint8Array> {
  const { client, payer } = options
  const sender = payer.toSuiAddress()
  const gasOwner = options.sponsor?.toSuiAddress() ?? sender
  const coin = options.coin ?? (await coinRefs(client, sender, options.coinType))[0]
  const gas = options.gas ?? (await coinRefs(client, gasOwner, SUI_TYPE))
  if (!coin) throw new Error('payer has no coin of that type')
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasOwner(gasOwner)
  tx.setGasPrice(1000)
  tx.setGasBudget(options.gasBudget ?? 10_000_000n)
  tx.setGasPayment(gas.map(({ objectId, version, digest }) => ({ objectId, version, digest })))
  const [paid] = tx.splitCoins(tx.objectRef(coin), [tx.pure.u64(options.amount)])
  tx.transferObjects([paid!], tx.pure.address(options.to))
  return tx.build()
}

/** Gasless form: price 0, budget 0, no gas payment, ValidDuring; redeem_funds + send_funds. */
export async function buildGaslessTransfer(options: {
  payer: Ed25519Keypair
  to: string
  amount: bigint
  coinType: string
  chainId: string
  epoch?: bigint
  /** Override the called function (to test the allow-list). */
  target?: `${string}::${string}::${string}`
}): Promise<Uint8Array> {
  const epoch = options.epoch ?? 0n
  const tx = new Transaction()
  tx.setSender(options.payer.toSuiAddress())
  tx.setGasPrice(0)
  tx.setGasBudget(0)
  tx.setGasPayment([])
  tx.setExpiration({
    ValidDuring: {
      minEpoch: String(epoch),
      maxEpoch: String(epoch + 1n),
      minTimestamp: null,
      maxTimestamp: null,
      chain: options.chainId,
      nonce: (Math.random() * 0x100000000) >>> 0,
    },
  })
  const [funds] = tx.moveCall({
    target: '0x2::balance::redeem_funds',
    typeArguments: [options.coinType],
    arguments: [tx.withdrawal({ amount: options.amount, type: options.coinType })],
  })
  tx.moveCall({
    target: options.target ?? '0x2::balance::send_funds',
    typeArguments: [options.coinType],
    arguments: [funds!, tx.pure.address(options.to)],
  })
  return tx.build()
}

/** Sums balance changes per coin type. */
export function sumByType(
  changes: readonly { coinType: string; amount: string | bigint }[],
): Map<string, bigint> {
  const sums = new Map<string, bigint>()
  for (const c of changes) sums.set(c.coinType, (sums.get(c.coinType) ?? 0n) + BigInt(c.amount))
  return sums
}
