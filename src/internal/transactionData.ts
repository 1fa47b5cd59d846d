/**
 * Parsed `TransactionData` and digests, remembered per byte array: the pre-check, the ledger and
 * the settlement all look at the same submitted bytes, and parsing BCS and hashing are most of
 * what a payment costs a seller after the signature check. Keyed weakly by the `Uint8Array`
 * object, so entries go with the bytes. Callers must not mutate bytes after handing them over.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { TransactionDataBuilder } from '@mysten/sui/transactions'

/** `TransactionData` as `@mysten/sui`'s BCS schema parses it. */
export type ParsedTransactionData = ReturnType<typeof bcs.TransactionData.parse>

const parsed = new WeakMap<Uint8Array, ParsedTransactionData>()
const digests = new WeakMap<Uint8Array, string>()

/** Parses BCS `TransactionData` (throws on malformed bytes, like the schema does). */
export function parseTransactionData(txBytes: Uint8Array): ParsedTransactionData {
  let data = parsed.get(txBytes)
  if (data === undefined) {
    data = bcs.TransactionData.parse(txBytes)
    parsed.set(txBytes, data)
  }
  return data
}

/**
 * The transaction digest (base58) of BCS `TransactionData` bytes. It depends only on the bytes, so
 * it is known before submission and is the replay key.
 *
 * @param txBytes - BCS `TransactionData` bytes.
 */
export function transactionDigest(txBytes: Uint8Array): string {
  let digest = digests.get(txBytes)
  if (digest === undefined) {
    digest = TransactionDataBuilder.getDigestFromBytes(txBytes)
    digests.set(txBytes, digest)
  }
  return digest
}
