/**
 * Who may review what: the one set of review rules, for escrowed jobs and (by the marketplace) for
 * paid calls alike. Pure: given a purchase record, allowed or refused with a reason.
 *
 * Rules, in the order they are checked:
 * 1. the rating is a whole number of stars from 1 to 5 (`invalid_rating`);
 * 2. only the buyer of the purchase reviews it (`not_buyer`);
 * 3. no self-purchase: buyer and seller are different addresses (`self_purchase`);
 * 4. a refunded purchase cannot be reviewed (`refunded`);
 * 5. the purchase is complete: a job released to the seller, a call paid and served (`not_completed`);
 * 6. one review per purchase (`already_reviewed`).
 *
 * @module
 */

/** The outcome of a purchase as far as reviews care. */
export type PurchaseOutcome =
  /** An escrowed job paid out to the seller. */
  | 'released'
  /** A paid call, settled and served. */
  | 'served'
  /** Money returned to the buyer (a refunded job or a refunded failed call). */
  | 'refunded'
  /** Not finished yet (a job funded or delivered, a call settling). */
  | 'pending'

/** One purchase, as the reviewer presents it and the ledger/store confirm it. */
export type PurchaseRecord = {
  kind: 'job' | 'call'
  /** The purchase's id: a job's object id, or a paid call's settlement digest. */
  id: string
  buyer: string
  seller: string
  outcome: PurchaseOutcome
  /** Who asks to review (the verified signer). */
  reviewer: string
  /** The stars asked for. */
  rating: number
  /** Whether this purchase already has a review. */
  alreadyReviewed: boolean
}

/** Why a review is refused. */
export type ReviewRefusal =
  | 'invalid_rating'
  | 'not_buyer'
  | 'self_purchase'
  | 'refunded'
  | 'not_completed'
  | 'already_reviewed'

/** The verdict. */
export type ReviewEligibility =
  | { status: 'allowed' }
  | { status: 'refused'; reason: ReviewRefusal; message: string }

const messages: Record<ReviewRefusal, string> = {
  invalid_rating: 'A rating is a whole number of stars from 1 to 5.',
  not_buyer: 'Only the buyer of a purchase may review it.',
  self_purchase: 'A self-purchase (buyer and seller the same) cannot be reviewed.',
  refunded: 'A refunded purchase cannot be reviewed.',
  not_completed: 'Only a completed purchase (a released job, a served call) can be reviewed.',
  already_reviewed: 'This purchase has already been reviewed.',
}

/**
 * Decides whether a review of a purchase is allowed.
 *
 * @example
 * reviewEligibility({ kind: 'job', id, buyer, seller, outcome: 'released', reviewer: buyer, rating: 5, alreadyReviewed: false })
 * // { status: 'allowed' }
 */
export function reviewEligibility(purchase: PurchaseRecord): ReviewEligibility {
  const refuse = (reason: ReviewRefusal): ReviewEligibility => ({
    status: 'refused',
    reason,
    message: messages[reason],
  })
  if (!Number.isInteger(purchase.rating) || purchase.rating < 1 || purchase.rating > 5) {
    return refuse('invalid_rating')
  }
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
  if (!same(purchase.reviewer, purchase.buyer)) return refuse('not_buyer')
  if (same(purchase.buyer, purchase.seller)) return refuse('self_purchase')
  if (purchase.outcome === 'refunded') return refuse('refunded')
  const complete = purchase.kind === 'job' ? 'released' : 'served'
  if (purchase.outcome !== complete) return refuse('not_completed')
  if (purchase.alreadyReviewed) return refuse('already_reviewed')
  return { status: 'allowed' }
}
