/**
 * A test GPU attestation service for the simulated enclave: it issues GPU attestation tokens
 * (ES384 JWTs shaped like NVIDIA NRAS's: `eat_nonce`, `x-nvidia-overall-att-result`, `exp`) and
 * publishes the JWKS that verifies them. A rogue key (same key id, not in the JWKS) signs tokens
 * that must be refused.
 *
 * @module
 */
import { generateKeyPairSync } from 'node:crypto'
import { type JSONWebKeySet, SignJWT } from 'jose'
import { GPU_NONCE_CLAIM, GPU_RESULT_CLAIM } from '../../attestation/gpu.js'

/** The issuer of the test service's tokens. */
export const TEST_GPU_ISSUER = 'https://gpu-attestation.tollgate.invalid'

/** A test GPU attestation service. */
export type TestGpuAttestation = {
  jwks: JSONWebKeySet
  /** A token bound to `nonce`, valid for `ttlMs`; `rogue` signs it with a key outside the JWKS. */
  token(nonce: string, options: { ttlMs: number; rogue?: boolean | undefined }): Promise<string>
}

/** Creates a test GPU attestation service (fresh keys). */
export function createTestGpuAttestation(): TestGpuAttestation {
  const kid = 'tollgate-test-gpu-1'
  const key = generateKeyPairSync('ec', { namedCurve: 'P-384' })
  const rogue = generateKeyPairSync('ec', { namedCurve: 'P-384' })
  const jwk = key.publicKey.export({ format: 'jwk' })
  return {
    jwks: { keys: [{ ...jwk, kid, alg: 'ES384', use: 'sig' }] },
    token(nonce, { ttlMs, rogue: useRogue }) {
      const now = Math.floor(Date.now() / 1000)
      return new SignJWT({
        [GPU_NONCE_CLAIM]: nonce,
        [GPU_RESULT_CLAIM]: true,
        'x-nvidia-ver': '2.0',
        submods: { 'GPU-0': { measres: 'success', 'x-nvidia-gpu-arch-check': true } },
      })
        .setProtectedHeader({ alg: 'ES384', kid, typ: 'JWT' })
        .setIssuer(TEST_GPU_ISSUER)
        .setIssuedAt(now)
        .setNotBefore(now - 60)
        .setExpirationTime(now + Math.ceil(ttlMs / 1000))
        .sign(useRogue ? rogue.privateKey : key.privateKey)
    },
  }
}
