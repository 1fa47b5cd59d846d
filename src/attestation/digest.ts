/**
 * The ACI ("aci/1") digests: workload id, keyset digest, nonce-bound report data and the keyset
 * endorsement message, all over JCS (RFC 8785) JSON.
 *
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import canonicalize from 'canonicalize'

const encoder = new TextEncoder()

/** UTF-8 bytes of the JCS form of `value`. */
export function jcsBytes(value: unknown): Uint8Array {
  const text = canonicalize(value)
  if (text === undefined) throw new TypeError('value has no JSON form')
  return encoder.encode(text)
}

/** `"sha256:" + hex(sha256(bytes))`: the hash form of ACI digests and receipt hashes. */
export function sha256Tag(bytes: Uint8Array): string {
  return `sha256:${bytesToHex(sha256(bytes))}`
}

/** `workload_id`: `sha256:` hex of sha256(JCS(identity public key)). */
export function workloadIdOf(identityPublicKey: unknown): string {
  return sha256Tag(jcsBytes(identityPublicKey))
}

/** `workload_keyset_digest`: `sha256:` hex of sha256(JCS(keyset)). */
export function keysetDigestOf(keyset: unknown): string {
  return sha256Tag(jcsBytes(keyset))
}

/** The 32 report-data bytes that bind a workload and its keyset to a verifier's nonce. */
export function reportDataOf(fields: {
  workloadId: string
  keysetDigest: string
  nonce: string
}): Uint8Array {
  return sha256(
    jcsBytes({
      purpose: 'aci.report_data.v1',
      workload_id: fields.workloadId,
      workload_keyset_digest: fields.keysetDigest,
      nonce: fields.nonce,
    }),
  )
}

/** The bytes the workload identity key signs to endorse a keyset. */
export function endorsementMessage(keysetDigest: string): Uint8Array {
  return jcsBytes({ purpose: 'aci.keyset.endorsement.v1', workload_keyset_digest: keysetDigest })
}

export { bytesToHex, hexToBytes }
