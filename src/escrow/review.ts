/**
 * The message a buyer signs (Sui personal-message signature) to review a purchase. Binding the
 * purchase, the stars and the comment's hash means a signature cannot be replayed onto another
 * review.
 *
 * @module
 */

import { normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { sha256 } from '@noble/hashes/sha2.js'

/**
 * The bytes to sign for a review:
 * `tollgate review v1\npurchase: <id>\nrating: <1-5>\ncomment-sha256: <hex>`.
 *
 * @example
 * const { signature } = await keypair.signPersonalMessage(reviewMessage({ purchaseId: jobId, rating: 5, comment: 'great' }))
 */
export function reviewMessage(review: {
  purchaseId: string
  rating: number
  comment: string
}): Uint8Array {
  const id = review.purchaseId.startsWith('0x')
    ? normalizeSuiAddress(review.purchaseId)
    : review.purchaseId
  const commentHash = toHex(sha256(new TextEncoder().encode(review.comment)))
  return new TextEncoder().encode(
    `tollgate review v1\npurchase: ${id}\nrating: ${review.rating}\ncomment-sha256: ${commentHash}`,
  )
}
