/**
 * The four listing gates (docs/conformance.md, "Gates"): (a) a registered agent identity, (b) a live 402 with a
 * well-formed challenge, (c) payment to the registered wallet, (d) a price within the cap. Each is
 * judged from what the seller answered; none of them pays.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { formatAmount, hasCode } from 'tollgate'
import { lookUpAgent } from './agent.js'
import { type CheckDefinition, error, fail, pass } from './check.js'
import { observe, readMpp, readSession, readX402 } from './observe.js'
import {
  challenged,
  noChallenge,
  offeredDetails,
  offeredMppText,
  offeredText,
  offers,
  priceOf,
  sameAddress,
  sameCoin,
  suiEntries,
} from './offers.js'

/** The largest price a listing may ask: 5 USDC. */
export const maxListingPrice = 5_000_000n

/** Gates (a)–(d), in report order. */
export const gateChecks: readonly CheckDefinition[] = [
  {
    id: 'gate.agent-identity',
    gate: 'a',
    title: 'an agent identity record exists on the ledger',
    hint: 'Register the seller with agent_registry::register from the wallet that receives payments (tollgate agent register); tollgate listing submit signs with that key, and tollgate conformance takes its address as --agent.',
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
        // An answer too large to read is the seller's to fix, not a probe that could not be made.
        if (hasCode(observation.error, 'too_large')) {
          return fail(`the answer could not be read: ${observation.exchange.error}`, {
            evidence,
            hint: "Keep the 402's headers and body small: buyers on Node refuse headers over 16 KiB, and many proxies refuse less.",
          })
        }
        return error(`the probe failed: ${observation.exchange.error}`, { evidence })
      }
      const x402 = readX402(observation.response)
      const mpp = readMpp(observation.response)
      const session = readSession(observation.response)
      context.first = { observation, x402, mpp, session }
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
        const offered = [offeredText(x402), offeredMppText(observation.response)]
          .filter((text) => text !== '')
          .join('; ')
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
]
