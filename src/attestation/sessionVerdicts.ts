/**
 * What a receipt verifier remembers about attested sessions, per verifier and bounded:
 *
 * - the quote verifier of each published trust policy, built once (its root CA parsed and its
 *   DCAP library loaded once; the library itself redoes all its collateral checks for every quote);
 * - the verdict of each session's report that verified, under the sha256 of the report's JCS bytes,
 *   the nonce and the sha256 of the published policy, with the times it holds for. Every receipt of
 *   a session relies on the same report, so the quote is checked once per session.
 *
 * A remembered verdict is reused only for a verification time `t` with `checkedAt ≤ t < until`,
 * where `until` is the earliest of: the report's `stale_after`, `fetched_at` + the freshness limit,
 * the keyset epoch's `not_after`, and the quote verdict's `validUntilMs` (when its verifier states
 * one; otherwise, and whenever a GPU token verifier is used, `checkedAt` only). `verifyReport`'s
 * checks that depend on time all pass for every such `t` when they passed at `checkedAt`, so the
 * reused verdict is the one a fresh check would give; outside the window the report is checked
 * again.
 *
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { createRecent } from '../internal/recent.js'
import { jcsBytes } from './digest.js'
import type { PublishedTrustPolicy } from './gatewayDocuments.js'
import type { QuoteVerdict, QuoteVerifier } from './quote.js'
import { type ReportFailureCode, type ReportVerification, verifyReport } from './report.js'
import { quoteVerifierOfPolicy, TDX_TEE_TYPE } from './tdx.js'
import type { InferenceReceiptPolicy } from './verifyInferenceReceipt.js'

/** How many policies' quote verifiers, and how many sessions' verdicts, a verifier remembers. */
const rememberedPolicies = 16
const rememberedSessions = 256
/** The freshness limit `verifyReport` applies by default (`maxAgeMs`). */
const maxReportAgeMs = 600_000

/**
 * The default quote verifier choice: for Intel TDX, `quoteVerifierOfPolicy` over the verifier
 * policy (root CA, collateral) the gateway published, its root pinned when `rootCaSha256` is given;
 * none for any other TEE type.
 */
export async function publishedQuoteVerifier(
  published: PublishedTrustPolicy,
  rootCaSha256?: string | undefined,
): Promise<QuoteVerifier | { error: string } | undefined> {
  if (published.tee_type !== TDX_TEE_TYPE) return undefined
  return quoteVerifierOfPolicy(published.quote_verifier, rootCaSha256)
}

/** A session as the checks read it. */
export type SessionToCheck = {
  nonce: string
  policy: PublishedTrustPolicy
  report: unknown
}

/** The outcome of {@link SessionChecks.check}. */
export type SessionCheck =
  | {
      status: 'verified'
      report: Extract<ReportVerification, { status: 'verified' }>
      /** hex sha256 of the report's JCS bytes. */
      reportSha256: string
      /** Whether the verdict was remembered from an earlier check of this verifier. */
      reused: boolean
    }
  | { status: 'failed'; code: ReportFailureCode; message: string }

/** The session checks of one receipt verifier. */
export type SessionChecks = {
  /** Checks the session's report as of `now` (ms), reusing a verdict still valid then. */
  check(session: SessionToCheck, now: number): Promise<SessionCheck>
}

type Remembered = {
  report: Extract<ReportVerification, { status: 'verified' }>
  checkedAt: number
  until: number
}

const sha256Hex = (data: string | Uint8Array) =>
  bytesToHex(sha256(typeof data === 'string' ? utf8ToBytes(data) : data))

/** The session checks of one receipt verifier under `policy` (see the module's description). */
export function createSessionChecks(policy: InferenceReceiptPolicy): SessionChecks {
  const verifiers = createRecent<string, Promise<QuoteVerifier | { error: string } | undefined>>({
    max: rememberedPolicies,
  })
  const verdicts = createRecent<string, Remembered>({ max: rememberedSessions })

  async function quoteVerifierOf(published: PublishedTrustPolicy, policyKey: string) {
    const chosen = policy.quoteVerifier ?? publishedQuoteVerifier
    if (typeof chosen !== 'function') return chosen
    const known = verifiers.get(policyKey)
    if (known !== undefined) return known
    const built = chosen(published, policy.rootCaSha256)
    const answer = await built.catch(() => ({ error: 'the quote verifier could not be built' }))
    // An answer is remembered when it is a verifier: a failure to build one is tried again.
    if (answer !== undefined && !('error' in answer)) verifiers.remember(policyKey, built)
    return answer
  }

  return {
    async check(session, now) {
      const policyKey = sha256Hex(JSON.stringify(session.policy))
      const quoteVerifier = await quoteVerifierOf(session.policy, policyKey)
      if (quoteVerifier === undefined) {
        return {
          status: 'failed',
          code: 'tee_type_unsupported',
          message: `no quote verifier for ${session.policy.tee_type}`,
        }
      }
      if ('error' in quoteVerifier) {
        return { status: 'failed', code: 'quote_invalid', message: quoteVerifier.error }
      }
      let reportSha256: string
      try {
        reportSha256 = sha256Hex(jcsBytes(session.report))
      } catch {
        return { status: 'failed', code: 'report_malformed', message: 'the report is not JSON' }
      }
      const key = `${reportSha256}\n${sha256Hex(session.nonce)}\n${policyKey}`
      const known = verdicts.get(key)
      if (known !== undefined && known.checkedAt <= now && now < known.until) {
        return { status: 'verified', report: known.report, reportSha256, reused: true }
      }
      let quoteVerdict: QuoteVerdict | undefined
      const report = await verifyReport(session.report, {
        nonce: session.nonce,
        quoteVerifier: {
          teeType: quoteVerifier.teeType,
          async verify(quote, options) {
            quoteVerdict = await quoteVerifier.verify(quote, options)
            return quoteVerdict
          },
        },
        allowedMeasurements:
          policy.allowedMeasurements ?? session.policy.allowed_measurements ?? [],
        gpuVerifier: policy.gpuVerifier,
        now,
        maxAgeMs: maxReportAgeMs,
      })
      if (report.status === 'failed') return report
      const fresh = report.report.attestation.freshness
      const quoteUntil =
        policy.gpuVerifier === undefined && quoteVerdict?.status === 'valid'
          ? (quoteVerdict.validUntilMs ?? now + 1)
          : now + 1
      const until = Math.min(
        report.staleAtMs,
        Date.parse(fresh.fetched_at) + maxReportAgeMs + 1,
        Date.parse(report.report.attestation.workload_keyset.keyset_epoch.not_after),
        quoteUntil,
      )
      verdicts.remember(key, { report, checkedAt: now, until })
      return { status: 'verified', report, reportSha256, reused: false }
    },
  }
}
