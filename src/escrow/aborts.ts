/**
 * The `escrow` module's abort codes by name, and a failed move's ledger message said with the name
 * (`ENOT_SELLER`) rather than the bare number the ledger reports (`abort code: 2`).
 *
 * @module
 */
import { escrowAbortCodes } from '../testing/ledger/signatures.js'

/**
 * The `escrow` module's abort codes: name and when it happens (docs/escrow.md, "Abort codes"). The
 * names are the `E*` constants of `move/tollgate/sources/escrow.move`.
 */
export const escrowAborts: Readonly<Record<number, { name: string; when: string }>> =
  Object.fromEntries(
    Object.values(escrowAbortCodes).map((abort) => [
      Number(abort.code),
      { name: abort.name, when: abort.when },
    ]),
  )

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
