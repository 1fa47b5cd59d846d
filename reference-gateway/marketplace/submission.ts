/**
 * Judging a submitted endpoint: the seller's agent identity on the ledger first (no URL is probed
 * for an unregistered key), then the four listing gates (docs/conformance.md) through the conformance API
 * (read-only: nothing is paid), then the terms the listing records, read from one more SSRF-safe
 * probe of the seller and checked again (the seller might answer differently the second time).
 * What the submitter is told of a refusal ({@link refusalOf}) never includes what the URL answered.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { hasCode } from 'tollgate'
import { readOffers } from 'tollgate/client'
import {
  type CheckResult,
  lookUpAgent,
  maxListingPrice,
  probe,
  runConformance,
} from 'tollgate/conformance'

/** What the gates need besides the submission. */
export type GateOptions = {
  /** Reads agent identity records (gate a). */
  client: ClientWithCoreApi
  /** Package of `agent_registry`. Default the conformance suite's default. */
  registryPackage?: string | undefined
  /** The network challenges must pay on (the gateway's). */
  network: string
  /** The USDC coin type. */
  usdc: string
  /**
   * Allow sellers on loopback or private networks. Only for tests and embedded local stacks.
   * Security: SSRF; default false.
   */
  allowPrivateNetwork?: boolean | undefined
  /** Timeout of each probe request, ms. Default 15 000. */
  timeoutMs?: number | undefined
}

/** The endpoint a seller submits. */
export type Submission = {
  /** The agent address (normalised). */
  seller: string
  url: string
  method: string
  /** The body probes send (JSON text). */
  probeBody: string
}

/** The terms a listing records. */
export type ListedTerms = { network: string; asset: string; price: bigint; payTo: string }

/** A failed gate and what shows it. */
export type GateFailure = {
  gate: 'a' | 'b' | 'c' | 'd'
  checks: Pick<CheckResult, 'id' | 'title' | 'status' | 'message' | 'hint' | 'evidence'>[]
}

/** The verdict on a submission. */
export type GateVerdict =
  | { status: 'passed'; terms: ListedTerms; summary: string }
  | {
      status: 'failed'
      failures: GateFailure[]
      /** Gates that could not be judged because an earlier one failed (e.g. no 402 to read). */
      notJudged: GateFailure['gate'][]
      summary: string
    }
  | { status: 'unusable'; message: string }

const gates = ['a', 'b', 'c', 'd'] as const

/**
 * Runs the four gates against a submission.
 *
 * @example
 * ```ts
 * const verdict = await judgeSubmission(submission, { client, network: 'sui:mainnet', usdc })
 * ```
 */
export async function judgeSubmission(
  submission: Submission,
  options: GateOptions,
): Promise<GateVerdict> {
  // Gate a first, on the ledger alone: the seller's URL is probed only for a registered agent, so
  // an anonymous key cannot make the gateway send requests anywhere.
  const unregistered = await unregisteredAgent(submission.seller, options)
  if (unregistered !== undefined) return unregistered
  let report: Awaited<ReturnType<typeof runConformance>>
  try {
    report = await runConformance({
      url: submission.url,
      method: submission.method,
      body: submission.probeBody,
      agent: submission.seller,
      // Without an identity record (gate a fails), gates b–d judge against the signer's address.
      walletAddress: submission.seller,
      ledger: options.client,
      registryPackage: options.registryPackage,
      network: options.network,
      usdc: options.usdc,
      mode: 'read-only',
      allowPrivateNetwork: options.allowPrivateNetwork,
      timeoutMs: options.timeoutMs,
    })
  } catch (error) {
    if (hasCode(error, 'invalid_options')) return { status: 'unusable', message: error.message }
    throw error
  }
  const failures: GateFailure[] = []
  const notJudged: GateFailure['gate'][] = []
  for (const gate of gates) {
    if (report.gates[gate] === 'pass') continue
    if (report.gates[gate] === 'skip') {
      notJudged.push(gate)
      continue
    }
    failures.push({
      gate,
      checks: report.checks
        .filter((c) => c.gate === gate && c.status !== 'pass')
        .map(({ id, title, status, message, hint, evidence }) => ({
          id,
          title,
          status,
          message,
          hint,
          evidence,
        })),
    })
  }
  if (failures.length > 0 || notJudged.length > 0) {
    const summary =
      failures.length > 0
        ? `gate ${failures.map((f) => f.gate).join(', ')} failed`
        : `gate ${notJudged.join(', ')} could not be judged`
    return { status: 'failed', failures, notJudged, summary }
  }
  const identity = report.checks.find((c) => c.id === 'gate.agent-identity')
  const wallet = identity?.details?.wallet
  const registered = typeof wallet === 'string' ? normalizeSuiAddress(wallet) : submission.seller
  const terms = await readTerms(submission, registered, options)
  if (terms.status === 'failed') return terms
  return { status: 'passed', terms: terms.terms, summary: 'all four gates passed' }
}

const identityCheck = {
  id: 'gate.agent-identity',
  title: 'an agent identity record exists on the ledger',
  hint: 'Register the seller with agent_registry::register (tollgate agent register) and submit from that address.',
} as const

/** Gate a failed (nothing else judged), or `undefined` when the seller is a registered agent. */
async function unregisteredAgent(
  seller: string,
  options: GateOptions,
): Promise<Extract<GateVerdict, { status: 'failed' }> | undefined> {
  let found: Awaited<ReturnType<typeof lookUpAgent>>
  let status: 'fail' | 'error' = 'fail'
  let message: string
  try {
    found = await lookUpAgent(options.client, {
      address: seller,
      registryPackage: options.registryPackage,
    })
    if (found.status === 'found') return undefined
    message =
      found.status === 'not_found'
        ? 'no agent identity record is owned by this address'
        : 'the agent identity record is unreadable'
  } catch {
    status = 'error'
    message = 'the ledger did not answer; try again'
  }
  return {
    status: 'failed',
    summary: 'gate a failed',
    notJudged: ['b', 'c', 'd'],
    failures: [{ gate: 'a', checks: [{ ...identityCheck, status, message, evidence: [] }] }],
  }
}

/**
 * A refusal as the submitter is told it: which gate, which check, its status and why — never what
 * the probed URL answered (no bodies, headers or values read from it, which could be an internal
 * service's): a check's message is the gateway's own sentence naming at most the HTTP status.
 * `tollgate conformance <url>` run by the seller shows the details.
 */
export function refusalOf(failures: readonly GateFailure[]): {
  gate: GateFailure['gate']
  checks: { id: string; title: string; status: string; message: string; hint: string }[]
}[] {
  return failures.map((failure) => ({
    gate: failure.gate,
    checks: failure.checks.map((check) => ({
      id: check.id,
      title: check.title,
      status: check.status,
      message: safeMessage(check),
      hint: check.hint,
    })),
  }))
}

function safeMessage(check: GateFailure['checks'][number]): string {
  // The gateway's own sentences: gate a (the ledger), and the terms read at listing.
  if (check.id === identityCheck.id && check.evidence.length === 0) return check.message
  if (check.id.startsWith('listing.')) return check.message
  const answered = check.evidence.find((e) => e.response !== undefined)?.response?.status
  if (answered !== undefined) return `the check failed on an answer with HTTP status ${answered}`
  if (check.evidence.some((e) => e.error !== undefined)) return 'the probe got no answer'
  return `the check ended with status ${check.status}`
}

/** The terms of the seller's challenge on the gateway's network, checked against gates b–d. */
async function readTerms(
  submission: Submission,
  wallet: string,
  options: GateOptions,
): Promise<{ status: 'ok'; terms: ListedTerms } | Extract<GateVerdict, { status: 'failed' }>> {
  const failed = (gate: GateFailure['gate'], message: string) => ({
    status: 'failed' as const,
    summary: `gate ${gate} failed`,
    notJudged: [],
    failures: [
      {
        gate,
        checks: [
          {
            id: `listing.${gate}`,
            title: 'the terms at listing',
            status: 'fail' as const,
            message,
            hint: '',
            evidence: [],
          },
        ],
      },
    ],
  })
  let answer: Awaited<ReturnType<typeof probe>>
  try {
    answer = await probe(submission.url, {
      method: submission.method,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      ...(submission.method === 'GET' ? {} : { body: submission.probeBody }),
      allowPrivateNetwork: options.allowPrivateNetwork,
      timeoutMs: options.timeoutMs ?? 15_000,
    })
  } catch (error) {
    return failed('b', `the second probe failed: ${(error as Error).message}`)
  }
  if (answer.status !== 402) return failed('b', `the second probe was answered ${answer.status}`)
  const { offers } = readOffers({
    bodyText: answer.body,
    wwwAuthenticate: answer.headers['www-authenticate'] ?? null,
  })
  const mine = offers.filter((o) => o.network === options.network && o.asset === options.usdc)
  if (mine.length === 0) return failed('b', `no USDC offer on ${options.network}`)
  let price = 0n
  for (const offer of mine) if (offer.amount > price) price = offer.amount
  if (price > maxListingPrice) return failed('d', `price ${price} base units is above the cap`)
  const payTo = normalizeSuiAddress(mine[0]?.payTo ?? '')
  if (mine.some((o) => normalizeSuiAddress(o.payTo) !== wallet)) {
    return failed('c', 'an offer does not pay the registered wallet')
  }
  return { status: 'ok', terms: { network: options.network, asset: options.usdc, price, payTo } }
}
