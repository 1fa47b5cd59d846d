/**
 * What a check is: the context every check shares, its definition, and the verdicts it returns.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { MppReading, Observation, SessionReading, X402Reading } from './observe.js'
import type { PaidState } from './payer.js'
import type { ProbeOptions } from './probe.js'
import type { CheckStatus, Exchange, Gate } from './report.js'
import type { SessionOptions, SessionState } from './sessionPayer.js'

/** What one check concluded. */
export type Verdict = {
  status: CheckStatus
  message: string
  hint?: string | undefined
  evidence?: Exchange[] | undefined
  details?: Record<string, unknown> | undefined
}

/** Everything the checks share. */
export type CheckContext = {
  url: string
  method: string
  body: string
  network: string
  usdc: string
  probeOptions: ProbeOptions
  client: ClientWithCoreApi | undefined
  agent: string | undefined
  walletAddress: string | undefined
  registryPackage: string | undefined
  openapiUrl: string | undefined
  /** Filled by gate (a): the registered wallet. */
  wallet: string | null
  /** Present in `paid` mode with a ledger and a wallet. */
  paid?: PaidState | undefined
  /** Tells the person waiting what the running check does (set by the runner per check). */
  progress?: ((message: string) => void) | undefined
  /** Filled by gate (b): the unpaid probe and its readings. */
  first?: {
    observation: Observation
    x402: X402Reading
    mpp: MppReading
    session: SessionReading
  }
  /** How the session checks open a channel (the pinned channel package, the deposit cap). */
  sessionOptions?: SessionOptions | undefined
  /** Filled by the session checks as they go: the channel they opened. */
  session?: SessionState | undefined
}

/** A check definition. */
export type CheckDefinition = {
  id: string
  gate: Gate
  title: string
  /** Hint shown when the check fails. */
  hint: string
  mode: 'read-only' | 'paid'
  /**
   * Whether the check applies to this seller, asked when its turn comes (after gate b); a check
   * that does not apply is left out of the report. Default: every check applies.
   */
  appliesTo?: ((context: CheckContext) => boolean) | undefined
  run(context: CheckContext): Promise<Verdict>
}

/** A passing verdict. */
export const pass = (message: string, extra: Partial<Verdict> = {}): Verdict => ({
  status: 'pass',
  message,
  ...extra,
})
/** A failing verdict (the seller breaks the rule). */
export const fail = (message: string, extra: Partial<Verdict> = {}): Verdict => ({
  status: 'fail',
  message,
  ...extra,
})
/** A skipped verdict (not applicable, or not judgeable after an earlier failure). */
export const skip = (message: string, extra: Partial<Verdict> = {}): Verdict => ({
  status: 'skip',
  message,
  ...extra,
})
/** An error verdict (the suite could not judge: network, ledger, inputs). */
export const error = (message: string, extra: Partial<Verdict> = {}): Verdict => ({
  status: 'error',
  message,
  ...extra,
})

/** `pass` when `what` was answered 402, `fail` for another status, `error` for no answer. */
export function answeredWith402(observation: Observation, what: string): Verdict {
  const evidence = [observation.exchange]
  const status = observation.response?.status
  if (status === undefined) return error(`no answer: ${observation.exchange.error}`, { evidence })
  if (status === 402) return pass(`${what} was answered 402`, { evidence })
  return fail(`${what} was answered ${status}`, { evidence })
}
