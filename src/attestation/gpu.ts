/**
 * GPU evidence as an attestation token: a JWT a GPU attestation service (NVIDIA's NRAS in
 * production, the simulated enclave's in tests) issues after checking the GPUs' measurements,
 * verified with `jose` against the service's JWKS. Its claims must bind the verifier's nonce
 * (`eat_nonce`), state a passing measurement result (`x-nvidia-overall-att-result: true`) and be
 * within their validity (`exp`, `nbf`).
 *
 * @module
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose'

/** NVIDIA's remote attestation service JWKS (the production default). */
export const NVIDIA_NRAS_JWKS_URL = 'https://nras.attestation.nvidia.com/.well-known/jwks.json'

/** The claim that carries the nonce a GPU token is bound to. */
export const GPU_NONCE_CLAIM = 'eat_nonce'
/** The claim that states the overall measurement result (`true` when every GPU matched). */
export const GPU_RESULT_CLAIM = 'x-nvidia-overall-att-result'

/** Result of a GPU token check. */
export type GpuTokenVerdict =
  | { status: 'valid'; issuer: string | undefined; claims: Readonly<Record<string, unknown>> }
  | { status: 'invalid'; reason: string }

/** Checks GPU attestation tokens. */
export type GpuTokenVerifier = {
  /** Verifies a token bound to `nonce` (hex) at time `now` (ms since epoch; default the clock). */
  verify(
    token: string,
    options: { nonce: string; now?: number | undefined },
  ): Promise<GpuTokenVerdict>
}

/** Options of {@link jwksGpuTokenVerifier}. */
export type JwksGpuTokenVerifierOptions = {
  /** The service's JWKS: a URL fetched (and cached) by `jose`, or the key set itself. */
  jwks: string | URL | JSONWebKeySet
  /** The issuer (`iss`) required, if any. */
  issuer?: string | undefined
  /** Signature algorithms accepted. Default `['ES384', 'ES256']`. */
  algorithms?: readonly string[] | undefined
  /** Largest token accepted, characters. Default 64 KiB. */
  maxTokenLength?: number | undefined
}

/**
 * A {@link GpuTokenVerifier} checking tokens against a JWKS with `jose`.
 *
 * @example
 * ```ts
 * const gpu = jwksGpuTokenVerifier({ jwks: NVIDIA_NRAS_JWKS_URL })
 * const verdict = await gpu.verify(report.attestation.evidence.gpu_token, { nonce })
 * ```
 */
export function jwksGpuTokenVerifier(options: JwksGpuTokenVerifierOptions): GpuTokenVerifier {
  const keys: JWTVerifyGetKey =
    typeof options.jwks === 'string' || options.jwks instanceof URL
      ? createRemoteJWKSet(new URL(options.jwks), { timeoutDuration: 5_000 })
      : createLocalJWKSet(options.jwks)
  const algorithms = [...(options.algorithms ?? ['ES384', 'ES256'])]
  const maxLength = options.maxTokenLength ?? 64 * 1024
  return {
    async verify(token, { nonce, now }) {
      if (token.length > maxLength)
        return { status: 'invalid', reason: 'the GPU token is too large' }
      try {
        const { payload } = await jwtVerify(token, keys, {
          algorithms,
          ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
          currentDate: new Date(now ?? Date.now()),
          requiredClaims: ['exp', GPU_NONCE_CLAIM, GPU_RESULT_CLAIM],
        })
        if (payload[GPU_NONCE_CLAIM] !== nonce) {
          return { status: 'invalid', reason: 'the GPU token is bound to another nonce' }
        }
        if (payload[GPU_RESULT_CLAIM] !== true) {
          return { status: 'invalid', reason: 'the GPU measurements did not match' }
        }
        return { status: 'valid', issuer: payload.iss, claims: payload }
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'unknown error'
        return { status: 'invalid', reason: `the GPU token did not verify: ${reason}` }
      }
    },
  }
}
