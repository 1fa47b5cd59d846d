/**
 * The public verification routes of confidential models (docs/inference.md, "Confidential models"), no key:
 *
 * - `GET /v1/aci/attestation[?model=…][&nonce=<hex>]`: the model's attestation status as the
 *   gateway enforces it (verified, TEE type, workload id, receipt signing keys, TCB status, when;
 *   the session id). With `nonce` (16–64 bytes of lowercase hex) the gateway asks the enclave for a
 *   report bound to the caller's nonce and adds it as received, with the gateway's own verdict on
 *   it — so a caller can check the nonce binding itself. Each such report costs the enclave work:
 *   they are limited per client address (429 `rate_limit_exceeded` with `Retry-After`).
 * - `GET /v1/aci/receipts/{id}`: a stored receipt (the `x-receipt-id` of an answer), as the enclave
 *   signed it, with the hashes of the bytes the gateway sent and relayed and the session id.
 * - `GET /v1/aci/sessions/{id}`: the attested session a receipt references: the report, its nonce
 *   and the policy it was verified against.
 * - `GET /v1/aci/anchor/{id}`: a receipt's ledger anchor (state, transaction digest);
 *   `POST /v1/aci/anchor/{id}`: idempotent backfill — queues the anchor if missing and anchors what
 *   is due now (200 once anchored, 202 while not yet).
 *
 * @module
 */
import ipaddr from 'ipaddr.js'
import { Attestation } from 'tollgate'
import type { ConfidentialUpstream } from './confidential.js'
import { gpuVerifierOf, policyOf, quoteVerifierOf } from './confidential.js'
import { errorResponse } from './errors.js'
import { type RateLimiter, rateLimitHeaders } from './limits.js'
import type { ReceiptStore } from './receipts.js'

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' }
const idPattern = /^[A-Za-z0-9_-]{1,140}$/
const noncePattern = /^(?:[0-9a-f]{2}){16,64}$/

/**
 * The caller's IP address, what fresh-nonce attestations are counted by: the socket's peer (Node
 * bindings `env.incoming`), or with `trustProxy` the last `X-Forwarded-For` entry (the one the
 * proxy in front appended). Security: only trust a proxy that appends it. `'unknown'` when neither
 * gives a valid address.
 */
export function clientAddressOf(request: Request, env: unknown, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = (request.headers.get('x-forwarded-for') ?? '').split(',').pop()?.trim()
    if (forwarded !== undefined && ipaddr.isValid(forwarded)) return forwarded
  }
  const peer = (env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)
    ?.incoming?.socket?.remoteAddress
  return typeof peer === 'string' && ipaddr.isValid(peer) ? peer : 'unknown'
}

/**
 * Answers the `/v1/aci/…` routes.
 *
 * @example
 * ```ts
 * const aci = createAciHandler({ confidential: api.confidential, store })
 * app.get('/v1/aci/*', (c) => aci(c.req.raw))
 * ```
 */
export function createAciHandler(options: {
  confidential: ReadonlyMap<string, ConfidentialUpstream>
  store: ReceiptStore
  fetch?: typeof globalThis.fetch | undefined
  anchorNow?: (() => Promise<unknown>) | undefined
  /** Limits fresh-nonce attestations per client address. Default: not limited. */
  limiter?: RateLimiter | undefined
}): (request: Request, context?: { client?: string | undefined }) => Promise<Response> {
  const doFetch = options.fetch ?? globalThis.fetch
  const json = (value: unknown) => new Response(JSON.stringify(value), { headers: jsonHeaders })

  async function attestation(url: URL, client: string): Promise<Response> {
    const asked = url.searchParams.get('model')
    let upstream: ConfidentialUpstream | undefined
    if (asked !== null) upstream = options.confidential.get(asked)
    else if (options.confidential.size === 1) upstream = [...options.confidential.values()][0]
    else {
      return errorResponse('invalid_request', 'model: name a confidential model (?model=…)', {
        param: 'model',
      })
    }
    if (upstream === undefined) {
      return errorResponse(
        'model_not_found',
        `No confidential model \`${(asked ?? '').slice(0, 128)}\`. See GET /v1/models.`,
        { param: 'model' },
      )
    }
    const nonce = url.searchParams.get('nonce')
    if (nonce !== null && !noncePattern.test(nonce)) {
      return errorResponse('invalid_request', 'nonce: must be 16 to 64 bytes of lowercase hex', {
        param: 'nonce',
      })
    }
    if (nonce !== null && options.limiter !== undefined) {
      const decision = await options.limiter.take(client)
      if (decision.status === 'limited') {
        return errorResponse(
          'rate_limit_exceeded',
          'Too many fresh-nonce attestations from this address; retry after the Retry-After delay.',
          { param: 'nonce', headers: rateLimitHeaders(decision) },
        )
      }
    }
    const policy = policyOf(upstream.config)
    const current = await upstream.attestor.current()
    const summary: Record<string, unknown> = {
      object: 'aci.attestation',
      model: upstream.modelId,
      enforced: true,
      verified: current.status === 'verified',
      tee_type: policy.tee_type,
      policy,
    }
    if (current.status === 'verified') {
      const { session } = current
      await options.store.saveSession(upstream.modelId, session, policy)
      Object.assign(summary, {
        session_id: session.id,
        workload_id: session.workloadId,
        keyset_digest: session.keysetDigest,
        measurement: session.measurement,
        tcb_status: session.tcbStatus,
        signing_key: session.receiptKeys[0]?.key_id,
        signing_keys: session.receiptKeys,
        attested_at: new Date(session.attestedAtMs).toISOString(),
      })
    } else {
      Object.assign(summary, { failure: { code: current.code, message: current.message } })
    }
    if (nonce !== null) {
      let report: unknown
      try {
        const response = await doFetch(`${upstream.config.baseUrl}/attestation?nonce=${nonce}`, {
          headers: { accept: 'application/json' },
        })
        if (!response.ok) throw new Error(`status ${response.status}`)
        report = await response.json()
      } catch {
        return errorResponse('attestation_failed', 'The enclave gave no attestation report.')
      }
      const verdict = await Attestation.verifyReport(report, {
        nonce,
        quoteVerifier: quoteVerifierOf(upstream.config.quoteVerifier),
        gpuVerifier: gpuVerifierOf(upstream.config.gpu),
        allowedMeasurements: upstream.config.allowedMeasurements,
      })
      Object.assign(summary, {
        nonce,
        report,
        report_verification:
          verdict.status === 'verified'
            ? { status: 'verified' }
            : { status: 'failed', code: verdict.code, message: verdict.message },
      })
    }
    return json(summary)
  }

  return async (request, context) => {
    const url = new URL(request.url)
    const path = url.pathname.replace(/^\/v1\/aci\//, '')
    if (path === 'attestation') return attestation(url, context?.client ?? 'unknown')
    const [kind, id, ...rest] = path.split('/')
    if (kind === 'anchor' && rest.length === 0 && id !== undefined && idPattern.test(id)) {
      if (request.method === 'POST') {
        if (!(await options.store.backfillAnchor(id))) {
          return errorResponse('receipt_not_found', 'No such receipt.')
        }
        await options.anchorNow?.().catch(() => undefined)
      }
      const anchor = await options.store.anchor(id)
      if (anchor === undefined) return errorResponse('receipt_not_found', 'No such receipt.')
      return new Response(JSON.stringify(anchor), {
        status: request.method === 'POST' && anchor.state !== 'anchored' ? 202 : 200,
        headers: jsonHeaders,
      })
    }
    if (request.method !== 'GET') {
      return errorResponse('invalid_request', 'No such route. See /openapi.json.')
    }
    if (rest.length === 0 && id !== undefined && idPattern.test(id)) {
      if (kind === 'receipts') {
        const stored = await options.store.receipt(id)
        return stored === undefined
          ? errorResponse('receipt_not_found', 'No such receipt.')
          : json(stored)
      }
      if (kind === 'sessions') {
        const stored = await options.store.session(id)
        return stored === undefined
          ? errorResponse('session_not_found', 'No such attested session.')
          : json(stored)
      }
    }
    return errorResponse('invalid_request', 'No such route. See /openapi.json.')
  }
}
