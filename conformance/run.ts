/**
 * `runConformance()`: probes one seller URL against the four listing gates and the protocol rules,
 * and returns a report (see `report.ts`). Read-only by default; `mode: 'paid'` pays with a funded
 * test wallet on a test ledger.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createLedger, PaymentError } from 'tollgate'
import type { CheckContext, CheckDefinition } from './check.js'
import { readOnlyChecks } from './checks.js'
import { usdcOf } from './offers.js'
import { paidChecks, prepareExpiry } from './paid.js'
import type { PaidState } from './payer.js'
import type { CheckResult, ConformanceReport } from './report.js'
import { sessionChallengeCheck, sessionPaidChecks } from './sessions.js'

/** Options of {@link runConformance}. */
export type ConformanceOptions = {
  /** The seller endpoint to probe. */
  url: string
  /** HTTP method of the probe. Default `POST`. */
  method?: string | undefined
  /** Request body (JSON text or a value to serialise). Default `{}`. */
  body?: unknown
  /** The seller's agent address: its identity record is looked up on the ledger (gate a). */
  agent?: string | undefined
  /** The registered wallet, used for gates b–d when there is no agent record (gate a then fails). */
  walletAddress?: string | undefined
  /** The ledger: a full-node gRPC URL or a client. Needed for gate (a) and for `paid` mode. */
  ledger?: string | ClientWithCoreApi | undefined
  /** A funded test wallet (USDC, SUI for gas, and a second coin for the wrong-asset check): `paid` mode. */
  wallet?: Ed25519Keypair | undefined
  /** `read-only` (default, safe against production) or `paid` (spends the wallet's test money). */
  mode?: 'read-only' | 'paid' | undefined
  /** Per-request timeout in ms. Default 15 000. */
  timeoutMs?: number | undefined
  /** Allow loopback/private/link-local targets. Default false. Security: keep false for URLs you do not control. */
  allowPrivateNetwork?: boolean | undefined
  /** Network challenges must pay on. Default `sui:mainnet`. */
  network?: string | undefined
  /** USDC coin type. Default the USDC of `network`. */
  usdc?: string | undefined
  /** Package of `agent_registry`. Default the project's package on the local ledger. */
  registryPackage?: string | undefined
  /** Where the OpenAPI document is. Default `<origin>/openapi.json`. */
  openapiUrl?: string | undefined
  /** Longest wait for a challenge to expire in the expiry check. Default 90 000 ms. */
  maxExpiryWaitMs?: number | undefined
  /**
   * The session channel package and registry the payer trusts (`paid` mode, sellers offering MPP
   * sessions). Default: the local ledger's, when `ledger` is a local ledger's URL. Security: the
   * payer signs a channel open only into this package; an offer naming another is not paid.
   */
  sessionChannels?: { package: string; registry: string } | undefined
  /** Most the channel the session checks open may hold, base units. Default 1 000 000 (1 USDC). */
  maxSessionDeposit?: bigint | undefined
  /** Response body cap in bytes. Default 256 KiB. */
  maxBodyBytes?: number | undefined
  /** Called as each check starts and ends (live progress). Errors thrown here are ignored. */
  onProgress?: ((event: ProgressEvent) => void) | undefined
}

/** Progress of a run. */
export type ProgressEvent =
  | {
      type: 'start'
      id: string
      title: string
      gate: CheckResult['gate']
      /** `paid` checks pay and may wait (the expiry check waits for a challenge to expire). */
      mode: 'read-only' | 'paid'
    }
  /** A running check says what it is doing (e.g. how long it still waits). */
  | { type: 'progress'; id: string; message: string }
  | { type: 'end'; result: CheckResult }

/** Options that cannot describe a run (a usage error): `PaymentError` `invalid_options`. */
function usageError(message: string): PaymentError {
  return new PaymentError('invalid_options', message)
}

const errorHint =
  'The check could not be judged: make sure the URL is reachable from here (a local seller needs --allow-private-network; allowPrivateNetwork in code), the ledger answers, and the wallet is funded.'

/** Every check this version knows, in report order. */
export const allChecks: readonly CheckDefinition[] = [
  ...readOnlyChecks,
  sessionChallengeCheck,
  ...paidChecks,
  ...sessionPaidChecks,
]

/**
 * Runs the suite against one URL.
 *
 * @throws {PaymentError} `invalid_options` for an unusable URL, body, network or mode — never for what the
 *   seller does (that is in the report).
 * @example
 * ```ts
 * const report = await runConformance({ url: 'https://api.example.com/v1/answer', agent, ledger: 'https://fullnode.mainnet.sui.io:443' })
 * if (!report.listable) process.exitCode = 1
 * ```
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const started = Date.now()
  const mode = options.mode ?? 'read-only'
  const network = options.network ?? 'sui:mainnet'
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    throw usageError(`not a URL: ${String(options.url).slice(0, 200)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError('the URL must be http or https')
  }
  const usdc = options.usdc ?? usdcOf(network)
  if (usdc === undefined) throw usageError(`no USDC coin type known for ${network}; pass usdc`)
  const body =
    options.body === undefined
      ? '{}'
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body)
  const client =
    options.ledger === undefined
      ? undefined
      : typeof options.ledger === 'string'
        ? new SuiGrpcClient({ network: 'mainnet', baseUrl: options.ledger })
        : options.ledger
  if (mode === 'paid' && (client === undefined || options.wallet === undefined)) {
    throw usageError('paid mode needs a test ledger and a funded wallet')
  }
  const context: CheckContext = {
    url: url.href,
    method: (options.method ?? 'POST').toUpperCase(),
    body,
    network,
    usdc,
    probeOptions: {
      allowPrivateNetwork: options.allowPrivateNetwork,
      timeoutMs: options.timeoutMs ?? 15_000,
      maxBodyBytes: options.maxBodyBytes,
    },
    client,
    agent: options.agent,
    walletAddress: options.walletAddress,
    registryPackage: options.registryPackage,
    openapiUrl: options.openapiUrl,
    wallet: null,
    sessionOptions: {
      channels: options.sessionChannels,
      maxDeposit: options.maxSessionDeposit ?? 1_000_000n,
      ledgerUrl: typeof options.ledger === 'string' ? options.ledger : undefined,
    },
  }
  const emit = (event: ProgressEvent) => {
    try {
      options.onProgress?.(event)
    } catch {
      // Reporters must not break the run.
    }
  }
  const results: CheckResult[] = []
  for (const check of allChecks) {
    // A check for something the seller does not offer (a session) is left out of the report.
    if (check.appliesTo !== undefined && !check.appliesTo(context)) continue
    emit({
      type: 'start',
      id: check.id,
      title: check.title,
      gate: check.gate,
      // A paid check in a read-only run is skipped at once: it is announced as read-only.
      mode: check.mode === 'paid' && mode === 'paid' ? 'paid' : 'read-only',
    })
    context.progress = (message) => emit({ type: 'progress', id: check.id, message })
    const t0 = performance.now()
    if (
      check.mode === 'paid' &&
      mode === 'paid' &&
      context.paid === undefined &&
      client &&
      options.wallet
    ) {
      context.paid = {
        payer: options.wallet,
        ledger: createLedger({ client }),
        maxExpiryWaitMs: options.maxExpiryWaitMs ?? 90_000,
      } satisfies PaidState
      if (context.first?.observation.response?.status === 402) {
        await prepareExpiry(context, context.paid).catch(() => {})
      }
    }
    let verdict: Awaited<ReturnType<CheckDefinition['run']>>
    if (check.mode === 'paid' && mode !== 'paid') {
      verdict = { status: 'skip', message: 'paid checks run only in paid mode' }
    } else {
      try {
        verdict = await check.run(context)
      } catch (cause) {
        verdict = { status: 'error', message: `the check crashed: ${(cause as Error).message}` }
      }
    }
    const result: CheckResult = {
      id: check.id,
      gate: check.gate,
      title: check.title,
      status: verdict.status,
      message: verdict.message,
      hint:
        verdict.status === 'pass' || verdict.status === 'skip'
          ? ''
          : (verdict.hint ?? (verdict.status === 'error' ? errorHint : check.hint)),
      evidence: verdict.evidence ?? [],
      ...(verdict.details === undefined ? {} : { details: verdict.details }),
      durationMs: Math.round(performance.now() - t0),
    }
    results.push(result)
    emit({ type: 'end', result })
  }
  const gateStatus = (gate: 'a' | 'b' | 'c' | 'd') =>
    results.find((r) => r.gate === gate)?.status ?? 'error'
  const gates = { a: gateStatus('a'), b: gateStatus('b'), c: gateStatus('c'), d: gateStatus('d') }
  const count = (status: CheckResult['status']) => results.filter((r) => r.status === status).length
  return {
    version: 1,
    url: context.url,
    method: context.method,
    mode,
    network,
    wallet: context.wallet,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    gates,
    listable: Object.values(gates).every((s) => s === 'pass'),
    summary: {
      pass: count('pass'),
      fail: count('fail'),
      skip: count('skip'),
      error: count('error'),
    },
    checks: results,
  }
}
