/**
 * The paying fetch (x402 exact v1 and v2, MPP) against a hostile seller: a real HTTP server on
 * loopback whose 402 says one thing in one place and another elsewhere — a cheap x402 body with a
 * dear `PAYMENT-REQUIRED` or `WWW-Authenticate` paying someone else, or a look-alike coin. The
 * client signs only a transfer it builds from the offer it selected and checked (price cap, our
 * network, our USDC): nothing is signed, nothing is submitted, no paid request arrives, the
 * buyer's USDC is untouched. (These held before; the tests keep them held.)
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildChallenge } from '../challenge.js'
import { isPaymentError } from '../errors.js'
import { createLedger } from '../ledger/index.js'
import { useTestLedger, WORMHOLE_USDC_TYPE } from '../testing/index.js'
import { createPayingFetch } from './fetch.js'

const chain = useTestLedger({ beforeAll, afterAll })
let server: Server
let base: string
/** Headers and body of the next 402. */
let answer: { headers: Record<string, string>; body: string }
/** Requests that carried a payment credential. */
const paid: string[] = []
const secrets = ['a-hostile-secret-of-at-least-32-bytes!!']
const attacker = `0x${'ee'.repeat(32)}`
const seller = `0x${'5e'.repeat(32)}`

beforeAll(async () => {
  server = createServer((req, res) => {
    const h = req.headers
    if (h['x-payment'] || h['payment-signature'] || /Payment /i.test(h.authorization ?? '')) {
      paid.push(String(req.url))
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end('{"served":true}')
    }
    res.writeHead(402, answer.headers)
    res.end(answer.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
})

/** A 402: the body of `cheap`, the headers named in `from` taken from `dear`. */
function mixed(
  cheap: { price: bigint; payTo: string; asset?: string },
  dear: { price: bigint; payTo: string; asset?: string },
  from: ('payment-required' | 'www-authenticate')[],
) {
  const pieces = (t: typeof cheap) =>
    buildChallenge({ ...t, resource: `${base}/v1/answer`, network: 'sui:mainnet' }, { secrets })
  const a = pieces(cheap)
  const b = pieces(dear)
  const headers: Record<string, string> = { ...a.headers }
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase()
    if (from.includes(lower as (typeof from)[number])) {
      headers[name] = b.headers[name] as string
    }
  }
  return { headers, body: a.bodyText }
}

async function attempt(buyer: Ed25519Keypair, prefer: 'x402' | 'mpp') {
  const pay = createPayingFetch({
    signer: buyer,
    ledger: chain.url,
    limits: false,
    maxPrice: '0.05',
    prefer,
  })
  return pay(`${base}/v1/answer`, { method: 'POST', body: '{}' }).catch((e: unknown) => e)
}

describe('a hostile seller’s altered terms get nothing signed', () => {
  it.each([
    [
      'x402 v2: PAYMENT-REQUIRED asks 20 USDC to another address, the body 0.01',
      'x402',
      ['payment-required'],
    ],
    [
      'MPP: WWW-Authenticate asks 20 USDC to another address, the body 0.01',
      'mpp',
      ['www-authenticate'],
    ],
  ] as const)('%s → PRICE_ABOVE_MAX', async (_name, prefer, from) => {
    const buyer = chain.createTestWallet({ usdc: '25', sui: '1' })
    answer = mixed({ price: 10_000n, payTo: seller }, { price: 20_000_000n, payTo: attacker }, [
      ...from,
    ])
    paid.length = 0
    const error = await attempt(buyer, prefer)
    expect(isPaymentError(error) && error.code).toBe('PRICE_ABOVE_MAX')
    expect(paid).toEqual([])
    const ledger = createLedger({ url: chain.url })
    expect((await ledger.getBalance(buyer.toSuiAddress(), chain.usdcType)).total).toBe(25_000_000n)
  })

  it.each([
    ['x402 v1 and v2', 'x402'],
    ['MPP', 'mpp'],
  ] as const)('%s in a look-alike coin (wUSDC) → NO_PAYABLE_REQUIREMENT', async (_name, prefer) => {
    const buyer = chain.createTestWallet({ usdc: '25', sui: '1' })
    answer = mixed(
      { price: 10_000n, payTo: seller, asset: WORMHOLE_USDC_TYPE },
      { price: 10_000n, payTo: seller, asset: WORMHOLE_USDC_TYPE },
      [],
    )
    paid.length = 0
    const error = await attempt(buyer, prefer)
    expect(isPaymentError(error) && error.code).toBe('NO_PAYABLE_REQUIREMENT')
    expect(paid).toEqual([])
  })

  it('pays the cheap, consistent 402 (the refusals above are not blanket ones)', async () => {
    const buyer = chain.createTestWallet({ usdc: '25', sui: '1' })
    answer = mixed({ price: 10_000n, payTo: seller }, { price: 10_000n, payTo: seller }, [])
    paid.length = 0
    const response = (await attempt(buyer, 'x402')) as Response
    expect(response.status).toBe(200)
    expect(paid).toEqual(['/v1/answer'])
  })
})
