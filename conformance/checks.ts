/**
 * The read-only protocol checks (docs/conformance.md, "Protocol checks"; the wire is docs/protocol.md), and the read-only list in report order:
 * the four listing gates (see `gates.ts`) first. Each check is judged from what the seller answered;
 * none of them pays.
 *
 * @module
 */
import { formatAmount } from 'tollgate'
import {
  answeredWith402,
  type CheckContext,
  type CheckDefinition,
  fail,
  pass,
  skip,
  type Verdict,
} from './check.js'
import { gateChecks } from './gates.js'
import { observe, readX402V2 } from './observe.js'
import {
  challenged,
  noChallenge,
  offeredDetails,
  offeredText,
  offers,
  priceOf,
  sameAddress,
  sameCoin,
  suiEntries,
} from './offers.js'

/** The read-only protocol checks, in report order. */
const protocolChecks: readonly CheckDefinition[] = [
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
    hint: 'Answer 402 with the x402 body and add an accepts[] entry whose network is sui:mainnet, next to entries for other chains.',
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
    id: 'x402.v2-agrees',
    gate: 'protocol',
    title: 'the x402 version 2 PAYMENT-REQUIRED agrees with the version 1 terms (if offered)',
    hint: 'Send PAYMENT-REQUIRED: base64 {"x402Version":2,"resource":{"url":…},"accepts":[{scheme,network,amount,asset,payTo,maxTimeoutSeconds,extra}]} with the same terms and challenge id as the body.',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      const response = context.first.observation.response
      const v2 = response === undefined ? { status: 'absent' as const } : readX402V2(response)
      if (v2.status === 'absent') return skip('no PAYMENT-REQUIRED header offered')
      if (v2.status === 'invalid') return fail(`PAYMENT-REQUIRED is malformed: ${v2.reason}`)
      const v1 = suiEntries(context.first.x402)
      const entries = v2.required.accepts.filter((a) => a.network.startsWith('sui:'))
      if (entries.length === 0) return fail('PAYMENT-REQUIRED offers no Sui entry')
      if (v1.length === 0) return pass(`PAYMENT-REQUIRED offers ${entries.length} Sui entr(ies)`)
      const url = v2.required.resource.url
      for (const entry of entries) {
        const twin = v1.find(
          (e) =>
            e.network === entry.network &&
            e.maxAmountRequired === entry.amount &&
            sameCoin(e.asset, entry.asset) &&
            sameAddress(e.payTo, entry.payTo) &&
            e.extra?.challengeId === entry.extra?.challengeId,
        )
        if (twin === undefined) {
          return fail(
            `the version 2 entry for ${entry.network} (amount ${entry.amount}, payTo ${entry.payTo}) has no version 1 entry with the same terms and challenge id`,
          )
        }
        if (normalizeUrl(twin.resource) !== normalizeUrl(url)) {
          return fail(`PAYMENT-REQUIRED names resource ${url}, the body ${twin.resource}`)
        }
      }
      return pass(`PAYMENT-REQUIRED agrees with the body (${entries.length} Sui entr(ies))`)
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
    id: 'x402.v2-malformed-payment',
    gate: 'protocol',
    title: 'a malformed PAYMENT-SIGNATURE gets 402, not 5xx (if version 2 is offered)',
    hint: 'Decode PAYMENT-SIGNATURE through a schema; answer anything malformed with 402 and the reason (never a 500, never "no payment").',
    mode: 'read-only',
    async run(context) {
      if (!challenged(context)) return noChallenge()
      if (context.first.observation.response?.headers['payment-required'] === undefined) {
        return skip('no PAYMENT-REQUIRED header offered')
      }
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: {
          'content-type': 'application/json',
          'payment-signature': 'bm90LWEtcGF5bWVudA%%%',
        },
        body: context.body,
      })
      return answeredWith402(observation, 'a malformed PAYMENT-SIGNATURE')
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

/** Gates (a)–(d) and the read-only checks, in report order. */
export const readOnlyChecks: readonly CheckDefinition[] = [...gateChecks, ...protocolChecks]

function normalizeUrl(url: string): string {
  try {
    return new URL(url).href
  } catch {
    return url
  }
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
