/**
 * Builds one Move call paid with the sender's SUI coins for gas (the project's ledger modules:
 * `agent_registry::register`, `receipt_anchor::anchor_receipt`), the same way on the local ledger
 * and on a real network.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import type { MoveCallRequest } from './types.js'

const SUI = normalizeStructTag('0x2::sui::SUI')
/** Default gas budget of a call (0.01 SUI). */
const DEFAULT_BUDGET = 10_000_000n
const MAX_COINS = 100

/** Builds the call's bytes (unsigned). */
export async function buildMoveCall(
  client: ClientWithCoreApi,
  request: MoveCallRequest & { sender: string },
): Promise<Uint8Array> {
  const sender = normalizeSuiAddress(request.sender)
  if (!/^0x[0-9a-f]{64}::[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$/.test(request.target)) {
    throw new PaymentError('invalid_config', `Not a Move function: ${request.target.slice(0, 200)}`)
  }
  const budget = request.gasBudget ?? DEFAULT_BUDGET
  const [{ referenceGasPrice }, gas] = await Promise.all([
    client.core.getReferenceGasPrice(),
    client.core.listCoins({ owner: sender, coinType: SUI, limit: MAX_COINS }),
  ])
  const coins = gas.objects.map((c) => ({
    objectId: c.objectId,
    version: c.version,
    digest: c.digest,
    balance: BigInt(c.balance),
  }))
  if (coins.reduce((sum, c) => sum + c.balance, 0n) < budget) {
    throw new PaymentError(
      'INSUFFICIENT_BALANCE',
      `Not enough SUI in coins for gas: the call needs up to ${budget} MIST.`,
      { details: { sender } },
    )
  }
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(BigInt(referenceGasPrice))
  tx.setGasBudget(budget)
  tx.setGasPayment(coins)
  tx.moveCall({
    target: request.target,
    arguments: request.arguments.map((argument) =>
      'clock' in argument
        ? tx.object.clock()
        : 'string' in argument
          ? tx.pure.string(argument.string)
          : 'u64' in argument
            ? tx.pure.u64(argument.u64)
            : tx.pure.address(normalizeSuiAddress(argument.address)),
    ),
  })
  return tx.build()
}
