/**
 * Test-only set-up of the core's unit tests (and `bench/settle.bench.ts`), not exported: offline
 * payment transactions built with the real `Transaction` builder and fixed object refs, so they need
 * no ledger. Not valid on any chain.
 *
 * @module
 */
import type { Keypair } from '@mysten/sui/cryptography'
import { Transaction } from '@mysten/sui/transactions'
import { toBase64 } from '@mysten/sui/utils'

/** Mainnet USDC and the bridged wUSDC the seller must refuse. */
export const usdcType =
  '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
export const wusdcType =
  '0x5d4b302506645c37ff133b98c4b50a5ae14841659738d6d733d59d0d217a93bf::coin::COIN'
/** A well-formed object digest (base58, 32 bytes). */
export const someDigest = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'

const ref = (byte: string, version: string) => ({
  objectId: `0x${byte.repeat(32)}`,
  version,
  digest: someDigest,
})

/** Coin form: split `amount` from an owned coin and transfer it to `to`; gas from `gasOwner`. */
export function coinPayment(options: {
  sender: string
  to: string
  amount: bigint
  gasOwner?: string | undefined
}): Transaction {
  const tx = new Transaction()
  tx.setSender(options.sender)
  tx.setGasPrice(1000)
  tx.setGasBudget(5_000_000)
  if (options.gasOwner) tx.setGasOwner(options.gasOwner)
  tx.setGasPayment([ref('11', '5')])
  const [coin] = tx.splitCoins(tx.objectRef(ref('22', '7')), [options.amount])
  tx.transferObjects([coin!], options.to)
  return tx
}

/** Gasless form: `balance::send_funds` of `amount` of `type` from the address balance. */
export function gaslessPayment(options: {
  sender: string
  to: string
  amount: bigint
  type?: string | undefined
}): Transaction {
  const type = options.type ?? usdcType
  const tx = new Transaction()
  tx.setSender(options.sender)
  tx.setGasPrice(0)
  tx.setGasBudget(0)
  tx.setGasPayment([])
  tx.setExpiration({
    ValidDuring: {
      minEpoch: '1',
      maxEpoch: '2',
      minTimestamp: null,
      maxTimestamp: null,
      chain: someDigest,
      nonce: 1,
    },
  })
  tx.moveCall({
    target: '0x2::balance::send_funds',
    typeArguments: [type],
    arguments: [tx.balance({ type, balance: options.amount }), tx.pure.address(options.to)],
  })
  return tx
}

/** Builds offline and signs: the bytes, their base64 and the serialized signature. */
export async function signOffline(tx: Transaction, signer: Keypair) {
  const bytes = await tx.build({ assumeSufficientAddressBalances: true } as never)
  const { signature } = await signer.signTransaction(bytes)
  return { bytes, transaction: toBase64(bytes), signature }
}
