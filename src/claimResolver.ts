/**
 * The ledger look-up the lease sweeper resolves payments with when their process died before the
 * store recorded the ledger's answer (`claimed` with a lapsed claim lease, or `pending`).
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { messageOf } from './internal/messageOf.js'
import { prepareTerms } from './internal/terms.js'
import type { ClaimResolution } from './leaseSweeper.js'
import type { Ledger } from './ledger/types.js'
import { checkEffects } from './settle.js'
import type { PaymentRecord } from './stores/types.js'

/** Where payments must arrive, as the seller's paywall is configured (see `PaywallOptions`). */
export type ClaimResolverTarget = {
  /** The Sui address that receives payments. */
  payTo: string
  /** The coin type paid. Default: the USDC of `network`. */
  asset?: string | undefined
  /** The network id. Default `sui:mainnet`. */
  network?: string | undefined
}

/**
 * Creates the `resolve` of the lease sweeper (`LeaseSweeperOptions.resolve`) that looks a digest up
 * on `ledger` and verifies its effects exactly as settlement does (`checkEffects`: the transaction
 * succeeded, and the asset arrived at `payTo`). The amount recorded is what arrived, whatever the
 * route's price: it is what is owed back. A transaction that executed without paying is `rejected`,
 * one the ledger does not know is `absent`, an unreadable ledger (or a target that does not
 * validate) is `unknown`.
 *
 * @param ledger - the seller's ledger.
 * @param target - the paywall's `payTo`, `asset` and `network`.
 * @example
 * ```ts
 * const sweeper = createLeaseSweeper({ store, refunder, resolve: ledgerClaimResolver(ledger, { payTo }) })
 * ```
 */
export function ledgerClaimResolver(
  ledger: Pick<Ledger, 'getTransaction'>,
  target: ClaimResolverTarget,
): (record: PaymentRecord) => Promise<ClaimResolution> {
  let terms: { payTo: string; asset: string; network: string } | undefined
  return async (record) => {
    try {
      // Normalised the way the routes' terms are (validated on first use: a bad configuration
      // already fails every priced route, and here leaves the payment for the next run).
      terms ??= prepareTerms({
        price: 1n,
        payTo: target.payTo,
        ...(target.asset === undefined ? {} : { asset: target.asset }),
        ...(target.network === undefined ? {} : { network: target.network }),
        resource: 'http://localhost/',
      })
    } catch (error) {
      return { status: 'unknown', reason: messageOf(error) }
    }
    const found = await ledger.getTransaction(record.digest)
    if (found.status === 'not_found') return { status: 'absent' }
    if (found.status === 'unknown') return { status: 'unknown', reason: found.reason }
    const payTo = normalizeSuiAddress(terms.payTo)
    // Any amount that arrived is owed back: the least acceptable is one base unit.
    const verdict = checkEffects(found.transaction, { payTo, asset: terms.asset, amount: 1n })
    if (verdict.status === 'rejected') return { status: 'rejected', code: verdict.code }
    return {
      status: 'executed',
      settlement: {
        payer: normalizeSuiAddress(found.transaction.sender),
        amount: verdict.amount,
        resource: record.resource,
        dialect: record.dialect,
        network: terms.network,
        asset: terms.asset,
        settledAt: new Date(),
      },
    }
  }
}
