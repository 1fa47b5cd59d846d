/**
 * The `escrow` module's abort codes by name, and a failed move's ledger message said with the name
 * (`ENOT_SELLER`) rather than the bare number the ledger reports (`abort code: 2`).
 *
 * @module
 */

/** The `escrow` module's abort codes: name and when it happens (docs/escrow.md, "Abort codes"). */
export const escrowAborts: Readonly<Record<number, { name: string; when: string }>> = {
  1: { name: 'ENOT_BUYER', when: 'reject by anyone but the buyer' },
  2: { name: 'ENOT_SELLER', when: 'deliver by anyone but the seller' },
  3: { name: 'EWRONG_STATE', when: "the move is not allowed in the job's state" },
  4: { name: 'EDELIVERY_CLOSED', when: 'deliver at or after the delivery deadline' },
  5: { name: 'EDEADLINE_NOT_REACHED', when: "the buyer's refund before the delivery deadline" },
  6: { name: 'EREVIEW_CLOSED', when: 'reject after the review window' },
  7: { name: 'EREVIEW_OPEN', when: "the seller's release while the review window is open" },
  8: { name: 'EBUDGET_MISMATCH', when: 'fund with a coin that is not the expected budget' },
  9: { name: 'EFEE_CHANGED', when: 'fund when the fee rate is no longer the expected one' },
  10: { name: 'EZERO_AMOUNT', when: 'fund with an empty coin' },
  11: { name: 'EBAD_DEADLINE', when: 'fund with a deadline or review window out of range' },
  12: { name: 'EBAD_HASH', when: 'terms or a delivery hash that is not 32 bytes' },
  13: { name: 'ETOO_LONG', when: 'a rejection reason over 1024 bytes' },
  14: { name: 'EBAD_FEE', when: 'set_fee over 10 000 bps' },
  15: { name: 'ENOT_ADMIN', when: 'set_fee with an AdminCap of another configuration' },
  16: { name: 'ENOT_PARTY', when: 'release or refund by someone who is neither buyer nor seller' },
  17: { name: 'EREAD_ONLY', when: 'a job passed by immutable reference to a move that changes it' },
}

/**
 * A failed move's ledger message with the escrow abort named: `MoveAbort in 1st command, abort
 * code: 2, in '0x…::escrow::deliver'` → `ENOT_SELLER (abort code 2: deliver by anyone but the
 * seller), in '0x…::escrow::deliver'`. Any other message (another module's abort, no abort) is
 * returned as it is.
 *
 * @example
 * ```ts
 * explainEscrowAbort("MoveAbort in 1st command, abort code: 2, in '0x1::escrow::deliver'")
 * // → "ENOT_SELLER (abort code 2: deliver by anyone but the seller), in '0x1::escrow::deliver'"
 * ```
 */
export function explainEscrowAbort(message: string): string {
  const found =
    /^MoveAbort(?: in \w+ command)?, abort code: (\d+)(, in '[^']*::escrow::[^']*'.*)$/s.exec(
      message,
    )
  if (found === null) return message
  const abort = escrowAborts[Number(found[1])]
  if (abort === undefined) return message
  return `${abort.name} (abort code ${found[1]}: ${abort.when})${found[2]}`
}
