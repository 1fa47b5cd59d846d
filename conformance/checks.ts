/**
 * The four listing gates (spec 3.1) and the read-only protocol checks (spec 4.5, PROTOCOLS §4–5).
 * Each check is judged from what the seller answered; none of them pays.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import type { Challenge } from 'tollgate'
import { baseUnitsSchema, formatAmount, usdcCoinTypes } from 'tollgate'
import { lookUpAgent } from './agent.js'
import {
  chargeOf,
  type LenientRequirement,
  type MppReading,
  type Observation,
  observe,
  readMpp,
  readX402,
  type X402Reading,
} from './observe.js'
import type { PaidState } from './paid.js'
import type { ProbeOptions } from './probe.js'
import type { CheckStatus, Exchange, Gate } from './report.js'

/** The largest price a listing may ask: 5 USDC. */
export const maxListingPrice = 5_000_000n

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
  first?: { observation: Observation; x402: X402Reading; mpp: MppReading }
}

/** A check definition. */
export type CheckDefinition = {
  id: string
  gate: Gate
  title: string
  /** Hint shown when the check fails. */
  hint: string
  mode: 'read-only' | 'paid'
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

/** The Sui entries of an x402 envelope (entries for other chains are not judged). */
export function suiEntries(reading: X402Reading): LenientRequirement[] {
  return reading.status === 'ok' ? reading.accepts.filter((a) => a.network.startsWith('sui:')) : []
}

/** What an x402 envelope offers, in words: `network (asset)` per entry; empty when unreadable. */
function offeredText(reading: X402Reading): string {
  if (reading.status !== 'ok') return ''
  return reading.accepts.map((a) => `${a.network} (asset ${a.asset})`).join(', ')
}

function offeredDetails(reading: X402Reading): Record<string, unknown> {
  return reading.status === 'ok'
    ? {
        networks: reading.accepts.map((a) => a.network),
        assets: reading.accepts.map((a) => a.asset),
      }
    : {}
}

function sameAddress(a: string, b: string): boolean {
  try {
    return normalizeSuiAddress(a) === normalizeSuiAddress(b)
  } catch {
    return false
  }
}

function sameCoin(a: string, b: string): boolean {
  try {
    return normalizeStructTag(a) === normalizeStructTag(b)
  } catch {
    return false
  }
}

/** Whether the unpaid probe produced a usable challenge (else dependent checks skip). */
function challenged(
  context: CheckContext,
): context is CheckContext & { first: NonNullable<CheckContext['first']> } {
  const first = context.first
  return (
    first?.observation.response?.status === 402 &&
    (suiEntries(first.x402).length > 0 || first.mpp.status === 'ok')
  )
}

const noChallenge = () => skip('no well-formed 402 to judge (see gate b)')

/** A price readable from an x402 amount string, or undefined. */
function priceOf(amount: string): bigint | undefined {
  return baseUnitsSchema.safeParse(amount).success ? BigInt(amount) : undefined
}

/** The terms of one offered challenge. */
export type OfferedTerms = {
  dialect: 'x402' | 'mpp'
  network: string
  payTo: string
  asset: string
  amount: string
}

/** Every offered Sui challenge: x402 entries and MPP charges, with their terms. */
export function offers(context: CheckContext): OfferedTerms[] {
  if (context.first === undefined) return []
  const out: OfferedTerms[] = suiEntries(context.first.x402).map((e) => ({
    dialect: 'x402' as const,
    network: e.network,
    payTo: e.payTo,
    asset: e.asset,
    amount: e.maxAmountRequired,
  }))
  if (context.first.mpp.status === 'ok') {
    for (const c of context.first.mpp.challenges) {
      const r = chargeOf(c)
      out.push({
        dialect: 'mpp' as const,
        network: r.methodDetails.network,
        payTo: r.recipient,
        asset: r.currency,
        amount: r.amount,
      })
    }
  }
  return out
}

/** Gates (a)–(d) and the read-only checks, in report order. */
export const readOnlyChecks: readonly CheckDefinition[] = [
  {
    id: 'gate.agent-identity',
    gate: 'a',
    title: 'an agent identity record exists on the ledger',
    hint: 'Register the seller with agent_registry::register from the wallet that receives payments, and pass that address as --agent.',
    mode: 'read-only',
    async run(context) {
      if (context.agent === undefined) {
        context.wallet =
          context.walletAddress === undefined ? null : normalizeSuiAddress(context.walletAddress)
        return fail('no agent address was given, so no identity record can be found')
      }
      if (context.client === undefined)
        return error('no ledger to look the agent up on (--ledger URL)')
      let found: Awaited<ReturnType<typeof lookUpAgent>>
      try {
        found = await lookUpAgent(context.client, {
          address: context.agent,
          registryPackage: context.registryPackage,
        })
      } catch (cause) {
        context.wallet =
          context.walletAddress === undefined ? null : normalizeSuiAddress(context.walletAddress)
        return error(`the ledger did not answer: ${(cause as Error).message}`)
      }
      if (found.status !== 'found') {
        context.wallet =
          context.walletAddress === undefined ? null : normalizeSuiAddress(context.walletAddress)
        return fail(
          found.status === 'not_found'
            ? `no AgentRecord is owned by ${normalizeSuiAddress(context.agent)}`
            : `the AgentRecord is unreadable: ${found.reason}`,
        )
      }
      context.wallet = found.record.agent
      const details: Record<string, unknown> = {
        objectId: found.record.objectId,
        name: found.record.name,
        wallet: found.record.agent,
      }
      if (
        context.walletAddress !== undefined &&
        !sameAddress(context.walletAddress, found.record.agent)
      ) {
        details.givenWalletIgnored = normalizeSuiAddress(context.walletAddress)
      }
      return pass(
        `agent record "${found.record.name}" found; registered wallet ${found.record.agent}`,
        { details },
      )
    },
  },
  {
    id: 'gate.live-402',
    gate: 'b',
    title: 'a live probe returns 402 with a well-formed challenge',
    hint: 'Answer an unpaid request with HTTP 402 and the x402 envelope (body) and/or a WWW-Authenticate: Payment challenge.',
    mode: 'read-only',
    async run(context) {
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: context.body,
      })
      const evidence = [observation.exchange]
      if (observation.response === undefined) {
        return error(`the probe failed: ${observation.exchange.error}`, { evidence })
      }
      const x402 = readX402(observation.response)
      const mpp = readMpp(observation.response)
      context.first = { observation, x402, mpp }
      const status = observation.response.status
      if (status !== 402) {
        const badBody = status === 400 || status === 415 || status === 422
        return fail(`the unpaid request was answered ${status}, not 402`, {
          evidence,
          ...(badBody
            ? {
                hint: `The endpoint refused the probe's body (${status}) before asking for payment: give the body it expects with --body '<json>' (body in code); the default is {}. A seller validates the body first, then answers 402.`,
              }
            : {}),
        })
      }
      if (suiEntries(x402).length === 0 && mpp.status !== 'ok') {
        const offered = offeredText(x402)
        return fail(
          `402, but with no well-formed Sui challenge in either dialect${offered === '' ? '' : `; it offers ${offered}`}`,
          {
            evidence,
            details: { x402: x402.status, mpp: mpp.status, ...offeredDetails(x402) },
          },
        )
      }
      const dialects = [suiEntries(x402).length > 0 ? 'x402' : '', mpp.status === 'ok' ? 'MPP' : '']
        .filter(Boolean)
        .join(' and ')
      return pass(`402 with a well-formed challenge in ${dialects}`, { evidence })
    },
  },
  {
    id: 'gate.pays-registered-wallet',
    gate: 'c',
    title: `every challenge pays the registered wallet in USDC on the network`,
    hint: 'Set payTo (x402) and the MPP recipient to the registered wallet, the asset to the USDC coin type, and the network to sui:mainnet.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      if (context.wallet === null) {
        return fail('no registered wallet is known (no agent record and no --wallet-address)')
      }
      const wallet = context.wallet
      const wrong = offers(context).flatMap((o) => {
        const problems: string[] = []
        if (!sameAddress(o.payTo, wallet)) problems.push(`pays ${o.payTo}`)
        if (!sameCoin(o.asset, context.usdc)) problems.push(`asset ${o.asset}`)
        if (o.network !== context.network) problems.push(`network ${o.network}`)
        return problems.length === 0 ? [] : [`${o.dialect}: ${problems.join(', ')}`]
      })
      if (wrong.length > 0) {
        return fail(
          `a challenge does not pay ${wallet} in USDC on ${context.network}: ${wrong.join('; ')}`,
        )
      }
      return pass(`every challenge pays ${wallet} in USDC on ${context.network}`)
    },
  },
  {
    id: 'gate.price-cap',
    gate: 'd',
    title: 'every price is at most 5 USDC',
    hint: 'Lower the price to 5 USDC (5000000 base units) or less per call.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const prices = offers(context).map((o) => ({ ...o, units: priceOf(o.amount) }))
      const readable = prices.filter((p) => p.units !== undefined)
      if (readable.length === 0) return fail('no price could be read in base units')
      const over = readable.filter((p) => (p.units as bigint) > maxListingPrice)
      if (over.length > 0) {
        return fail(
          `price ${formatAmount(over[0]?.units as bigint)} USDC (${over[0]?.dialect}) is above 5 USDC`,
        )
      }
      const top = readable.reduce((m, p) => ((p.units as bigint) > m ? (p.units as bigint) : m), 0n)
      return pass(`highest price ${formatAmount(top)} USDC`)
    },
  },
  {
    id: 'x402.well-formed',
    gate: 'protocol',
    title: 'the x402 envelope is well-formed (if offered)',
    hint: 'Send {"x402Version":1,"error":…,"accepts":[{scheme,network,maxAmountRequired,resource,description,mimeType,payTo,maxTimeoutSeconds,asset,extra}]} as the 402 body.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const x402 = context.first.x402
      if (x402.status === 'absent') return skip('no x402 envelope offered')
      if (x402.status === 'invalid') return fail(`the x402 envelope is malformed: ${x402.reason}`)
      return pass(
        `x402 envelope with ${x402.accepts.length} entr${x402.accepts.length === 1 ? 'y' : 'ies'}`,
      )
    },
  },
  {
    id: 'mpp.well-formed',
    gate: 'protocol',
    title: 'the MPP challenge is well-formed (if offered)',
    hint: 'Send WWW-Authenticate: Payment id=…, realm=…, method="sui", intent="charge", request=<base64url JCS {amount,currency,recipient,methodDetails:{network}}>, expires=….',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const mpp = context.first.mpp
      if (mpp.status === 'absent') return skip('no MPP challenge offered')
      if (mpp.status === 'invalid') return fail(`the MPP challenge is malformed: ${mpp.reason}`)
      return pass(`${mpp.challenges.length} sui charge challenge(s)`)
    },
  },
  {
    id: 'x402.network-entry',
    gate: 'protocol',
    title: 'the x402 envelope has an entry for the network',
    hint: 'Answer 402 with the x402 body (spec 4.5 rule 1) and add an accepts[] entry whose network is sui:mainnet, next to entries for other chains.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const x402 = context.first.x402
      if (x402.status === 'absent') return fail('the 402 has no x402 envelope in its body')
      if (x402.status === 'invalid') return skip('the envelope is malformed (see x402.well-formed)')
      const found = x402.accepts.some((a) => a.network === context.network)
      return found
        ? pass(`an entry for ${context.network} is offered`)
        : fail(
            `no accepts[] entry has network ${context.network}; it offers ${offeredText(x402)}`,
            {
              details: offeredDetails(x402),
            },
          )
    },
  },
  {
    id: 'x402.base-units',
    gate: 'protocol',
    title: 'amounts are integers in base units',
    hint: 'Write maxAmountRequired as a string of digits in base units (0.02 USDC is "20000"), never a decimal.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const entries = suiEntries(context.first.x402)
      if (entries.length === 0) return skip('no x402 entry for Sui offered')
      const bad = entries.filter((e) => priceOf(e.maxAmountRequired) === undefined)
      return bad.length === 0
        ? pass('every maxAmountRequired is in base units')
        : fail(`maxAmountRequired "${bad[0]?.maxAmountRequired}" is not an integer in base units`)
    },
  },
  {
    id: 'x402.max-timeout',
    gate: 'protocol',
    title: 'maxTimeoutSeconds is present',
    hint: 'Give every accepts[] entry maxTimeoutSeconds, a positive integer (60 is usual).',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const entries = suiEntries(context.first.x402)
      if (entries.length === 0) return skip('no x402 entry for Sui offered')
      const bad = entries.filter(
        (e) => !Number.isInteger(e.maxTimeoutSeconds) || (e.maxTimeoutSeconds as number) <= 0,
      )
      return bad.length === 0
        ? pass(`maxTimeoutSeconds ${entries.map((e) => e.maxTimeoutSeconds).join(', ')}`)
        : fail('an entry has no positive integer maxTimeoutSeconds')
    },
  },
  {
    id: 'x402.resource',
    gate: 'protocol',
    title: 'resource equals the probed URL',
    hint: 'Build resource from the public URL buyers call (set publicBaseUrl behind a reverse proxy).',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const entries = suiEntries(context.first.x402)
      if (entries.length === 0) return skip('no x402 entry for Sui offered')
      const expected = normalizeUrl(context.url)
      const bad = entries.filter((e) => normalizeUrl(e.resource) !== expected)
      return bad.length === 0
        ? pass(`resource is ${expected}`)
        : fail(`resource is ${bad[0]?.resource}, the probed URL is ${expected}`)
    },
  },
  {
    id: 'http.no-store',
    gate: 'protocol',
    title: 'the 402 carries Cache-Control: no-store',
    hint: 'Send Cache-Control: no-store with every 402 so that no cache replays a challenge.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const value = context.first.observation.response?.headers['cache-control'] ?? ''
      return /(^|,)\s*no-store\s*(,|$)/i.test(value)
        ? pass(`Cache-Control: ${value}`)
        : fail(value === '' ? 'no Cache-Control header' : `Cache-Control: ${value}`)
    },
  },
  {
    id: 'x402.malformed-payment',
    gate: 'protocol',
    title: 'a malformed X-PAYMENT gets 402, not 5xx',
    hint: 'Decode X-PAYMENT through a schema; answer anything malformed with 402 and the reason (never a 500, never "no payment").',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: { 'content-type': 'application/json', 'x-payment': 'bm90LWEtcGF5bWVudA%%%' },
        body: context.body,
      })
      return answeredWith402(observation, 'a malformed X-PAYMENT')
    },
  },
  {
    id: 'mpp.malformed-credential',
    gate: 'protocol',
    title: 'a malformed Payment credential gets 402, not 5xx',
    hint: 'Parse Authorization: Payment through a schema and answer a malformed credential with 402 (malformed-credential).',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      if (context.first.mpp.status !== 'ok') return skip('no MPP challenge offered')
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: { 'content-type': 'application/json', authorization: 'Payment !!not-base64url!!' },
        body: context.body,
      })
      return answeredWith402(observation, 'a malformed Payment credential')
    },
  },
  {
    id: 'openapi.payment-info',
    gate: 'protocol',
    title: 'OpenAPI x-payment-info matches the live price (if published)',
    hint: 'Keep x-payment-info.price (USDC, 6 decimals) and x402.payTo/network in the OpenAPI document equal to what the 402 asks.',
    mode: 'read-only',
    run: checkOpenApi,
  },
]

function normalizeUrl(url: string): string {
  try {
    return new URL(url).href
  } catch {
    return url
  }
}

function answeredWith402(observation: Observation, what: string): Verdict {
  const evidence = [observation.exchange]
  const status = observation.response?.status
  if (status === undefined) return error(`no answer: ${observation.exchange.error}`, { evidence })
  if (status === 402) return pass(`${what} was answered 402`, { evidence })
  return fail(`${what} was answered ${status}`, { evidence })
}

async function checkOpenApi(context: CheckContext): Promise<Verdict> {
  if (!challenged(context)) return noChallenge()
  const target = new URL(context.url)
  const docUrl = context.openapiUrl ?? new URL('/openapi.json', target).href
  const observation = await observe(docUrl, { ...context.probeOptions, method: 'GET' })
  const evidence = [observation.exchange]
  const response = observation.response
  if (response === undefined || response.status !== 200) {
    return skip(`no OpenAPI document at ${docUrl}`, { evidence })
  }
  let doc: { paths?: Record<string, Record<string, { 'x-payment-info'?: unknown }>> }
  try {
    doc = JSON.parse(response.body)
  } catch {
    return fail(`${docUrl} is not JSON`, { evidence })
  }
  const operation = doc.paths?.[target.pathname]?.[context.method.toLowerCase()]
  const info = operation?.['x-payment-info'] as
    | { price?: unknown; x402?: { payTo?: unknown; network?: unknown; asset?: unknown } }
    | undefined
  if (info === undefined) {
    return skip(
      `the OpenAPI document has no x-payment-info for ${context.method} ${target.pathname}`,
      {
        evidence,
      },
    )
  }
  const live = offers(context).find((o) => o.network === context.network) ?? offers(context)[0]
  const liveUnits = live === undefined ? undefined : priceOf(live.amount)
  if (live === undefined || liveUnits === undefined)
    return skip('no readable live price', { evidence })
  const problems: string[] = []
  const published = typeof info.price === 'string' ? info.price.replace(/^\$/, '') : undefined
  const expected = formatAmount(liveUnits)
  if (published === undefined || !/^\d+\.\d{6}$/.test(published)) {
    problems.push(`price ${JSON.stringify(info.price)} is not a USDC decimal with 6 digits`)
  } else if (published !== expected) {
    problems.push(`price ${published} differs from the live ${expected}`)
  }
  if (typeof info.x402?.payTo === 'string' && !sameAddress(info.x402.payTo, live.payTo)) {
    problems.push(`payTo ${info.x402.payTo} differs from the live ${live.payTo}`)
  }
  if (typeof info.x402?.network === 'string' && info.x402.network !== live.network) {
    problems.push(`network ${info.x402.network} differs from the live ${live.network}`)
  }
  return problems.length === 0
    ? pass(`x-payment-info price ${expected} matches`, { evidence })
    : fail(problems.join('; '), { evidence })
}

/** The charge request of an MPP challenge, or undefined when it is not a `sui` charge. */
export function chargeOfSafe(challenge: Challenge): ReturnType<typeof chargeOf> | undefined {
  try {
    return chargeOf(challenge)
  } catch {
    return undefined
  }
}

/** The USDC coin type of a network, if known. */
export function usdcOf(network: string): string | undefined {
  return usdcCoinTypes[network]
}
