/**
 * The paywall end to end: a real HTTP server on loopback, the ledger emulator driven by the real
 * SuiGrpcClient, real keys and signatures, and the memory store.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { transactionDigest } from '../internal/transactionData.js'
import { decodeReceipt, parseChallenge, serializeCredential } from '../mpp.js'
import { signProof } from '../proof.js'
import { useTestLedger, WORMHOLE_USDC_TYPE } from '../testing/index.js'
import { SUI_TYPE } from '../testing/ledger/state.js'
import { coinRefs } from '../testing/ledger/testHelpers.js'
import {
  mppAuthorization,
  signTestPayment,
  type TestPaymentOptions,
  x402PaymentHeader,
} from '../testing/payments.js'
import {
  decodeXPayment,
  decodeXPaymentResponse,
  encodeXPayment,
  parsePaymentRequired,
  x402Headers,
} from '../x402.js'
import { useTestPaywall } from './testHelpers.js'
import type { PaidRoute } from './types.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
const chain = useTestLedger({ beforeAll, afterAll })
let clock = Date.now()
const seller = new Ed25519Keypair().toSuiAddress()
const stranger = new Ed25519Keypair().toSuiAddress()
let calls = 0

const routes: Record<string, PaidRoute> = {
  '/paid': { price: '0.02', description: 'a paid answer' },
  '/dear': { price: '0.10' },
  '/echo': { price: '0.02', body: z.object({ text: z.string().max(100) }) },
  '/boom': { price: '0.02' },
  '/hold': { price: '0.02' },
  '/hold-manual': { price: '0.02', commit: 'manual' },
}
/** Holds the `/hold` and `/hold-manual` handlers until released. */
let hold = { entered: () => {}, released: Promise.resolve() }
/** What `commit()` returned in `/hold-manual`, once released. */
const commits: boolean[] = []

const served = useTestPaywall(
  chain,
  { payTo: seller, secrets: [secret], now: () => clock },
  (paywall) => {
    const handlers = Object.fromEntries(
      Object.entries(routes).map(([path, route]) => [
        path,
        paywall.protect(route, async (_request, paid) => {
          calls++
          if (path === '/boom') throw new Error('upstream failed')
          if (path === '/hold' || path === '/hold-manual') {
            hold.entered()
            await hold.released
          }
          if (path === '/hold-manual') {
            const started = paid.commit()
            commits.push(started)
            if (!started) return new Response(null, { status: 499 })
          }
          return Response.json({ ok: true, path, body: paid.body ?? null })
        }),
      ]),
    )
    return (request: Request) => {
      const handler = handlers[new URL(request.url).pathname]
      return handler ? handler(request) : new Response('not found', { status: 404 })
    }
  },
)

async function challengeFor(path: string, init: RequestInit = {}) {
  const response = await fetch(served.base + path, { method: 'POST', ...init })
  expect(response.status).toBe(402)
  const body = parsePaymentRequired(await response.json())
  const mpp = parseChallenge(response.headers.get('www-authenticate') ?? '')
  return { requirement: body.accepts[0]!, mpp, response }
}

type Form = 'coin' | 'gasless'

async function payX402(
  path: string,
  payer: Ed25519Keypair,
  options: TestPaymentOptions & { body?: string } = {},
) {
  const { requirement } = await challengeFor(path, bodyInit(options.body))
  const header = await x402PaymentHeader(chain.client, payer, requirement, options)
  return { header, response: await postWith(path, { [x402Headers.payment]: header }, options.body) }
}

function bodyInit(body: string | undefined): RequestInit {
  return body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }
}

function postWith(path: string, headers: Record<string, string>, body?: string) {
  const init = bodyInit(body)
  return fetch(served.base + path, {
    method: 'POST',
    ...init,
    headers: { ...(init.headers as Record<string, string>), ...headers },
  })
}

async function codeOf(response: Response): Promise<string | undefined> {
  expect(response.status).toBe(402)
  return ((await response.json()) as { code?: string }).code
}

const usdcOf = (address: string) => chain.usdcBalance(address)

describe('paywall over the ledger emulator', () => {
  it('answers an unpaid request with one 402 in both dialects', async () => {
    const { requirement, mpp, response } = await challengeFor('/paid')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(requirement).toMatchObject({
      scheme: 'exact',
      network: 'sui:mainnet',
      maxAmountRequired: '20000',
      payTo: seller,
      resource: `${served.base}/paid`,
    })
    expect(mpp.id).toBe(requirement.extra?.challengeId)
  })

  it.each<Form>(['coin', 'gasless'])('serves a %s-form x402 payment once', async (form) => {
    const payer = chain.createTestWallet({
      usdc: '1',
      into: form === 'gasless' ? 'addressBalance' : 'coin',
    })
    const before = await usdcOf(seller)
    const { header, response } = await payX402('/paid', payer, { form })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ ok: true })
    const receipt = decodeXPaymentResponse(response.headers.get(x402Headers.paymentResponse) ?? '')
    expect(receipt).toMatchObject({
      success: true,
      network: 'sui:mainnet',
      payer: payer.toSuiAddress(),
    })
    expect(await usdcOf(seller)).toBe(before + 20_000n)
    const onChain = await chain.client.core.getTransaction({ digest: receipt.transaction })
    expect(onChain.$kind).toBe('Transaction')
    expect((await served.store.get(receipt.transaction))?.state).toBe('served')

    const replay = await postWith('/paid', { [x402Headers.payment]: header })
    expect(await codeOf(replay)).toBe('replay')
    expect(await usdcOf(seller)).toBe(before + 20_000n)
  })

  it('serves an MPP payment: the buyer submits, sends digest and proof', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { mpp } = await challengeFor('/paid')
    const { authorization, digest } = await mppAuthorization(chain.client, payer, mpp)
    const response = await postWith('/paid', { authorization })
    expect(response.status).toBe(200)
    const receipt = decodeReceipt(response.headers.get('payment-receipt') ?? '')
    expect(receipt).toMatchObject({ status: 'success', method: 'sui', reference: digest })

    expect(await codeOf(await postWith('/paid', { authorization }))).toBe('replay')
  })

  it('refuses an MPP digest presented with someone else’s proof, and one that paid someone else', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { mpp } = await challengeFor('/paid')
    const thief = await mppAuthorization(chain.client, payer, mpp, { prover: new Ed25519Keypair() })
    expect(await codeOf(await postWith('/paid', { authorization: thief.authorization }))).toBe(
      'signer_mismatch',
    )
    const wrong = await mppAuthorization(chain.client, payer, mpp, { to: stranger })
    expect(await codeOf(await postWith('/paid', { authorization: wrong.authorization }))).toBe(
      'wrong_recipient',
    )
  })

  it.each([
    ['underpaid', { amount: 19_999n }, 'insufficient_amount'],
    ['paid to someone else', { to: stranger }, 'wrong_recipient'],
  ] as const)('rejects an x402 payment %s without serving it', async (_name, options, code) => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = calls
    const { response } = await payX402('/paid', payer, options)
    expect(await codeOf(response)).toBe(code)
    expect(calls).toBe(before)
  })

  it('rejects wUSDC where USDC is required, after settlement shows the asset', async () => {
    const payer = chain.createTestWallet({
      usdc: '0',
      extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
    })
    const before = calls
    const { response } = await payX402('/paid', payer, { coinType: WORMHOLE_USDC_TYPE })
    expect(await codeOf(response)).toBe('wrong_asset')
    expect(calls).toBe(before)
  })

  it('rejects a bad signature and a signature by someone other than the sender', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { requirement } = await challengeFor('/paid')
    const payment = await signTestPayment(chain.client, payer, {
      to: seller,
      amount: 20_000n,
      coinType: chain.usdcType,
    })
    const other = await new Ed25519Keypair().signTransaction(payment.bytes)
    const tampered = Buffer.from(payment.signature, 'base64')
    tampered[5] = (tampered[5] ?? 0) ^ 1
    for (const [signature, code] of [
      [tampered.toString('base64'), 'invalid_signature'],
      [other.signature, 'signer_mismatch'],
    ] as const) {
      const header = encodeXPayment({
        payload: {
          challengeId: requirement.extra?.challengeId as string,
          transaction: payment.transaction,
          signature,
        },
      })
      expect(await codeOf(await postWith('/paid', { [x402Headers.payment]: header }))).toBe(code)
    }
  })

  it('rejects an expired challenge and a challenge issued for another route', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { requirement } = await challengeFor('/dear')
    const cheap = await payX402('/paid', payer, {
      challengeId: requirement.extra?.challengeId as string,
    })
    expect(await codeOf(cheap.response)).toBe('invalid_challenge')

    const { requirement: old } = await challengeFor('/paid')
    clock += 100_000
    try {
      const late = await payX402('/paid', payer, { challengeId: old.extra?.challengeId as string })
      expect(await codeOf(late.response)).toBe('challenge_expired')
    } finally {
      clock -= 100_000
    }
  })

  it('refuses a challenge of a cheap route presented with its price on a dear route', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = calls
    const { requirement: cheap } = await challengeFor('/paid')
    const { response } = await payX402('/dear', payer, {
      challengeId: cheap.extra?.challengeId as string,
      amount: 20_000n,
    })
    expect(await codeOf(response)).toBe('invalid_challenge')
    expect(calls).toBe(before)
  })

  it('refuses an x402 payment presented again as MPP by its own payer (cross-dialect replay)', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { response } = await payX402('/paid', payer)
    expect(response.status).toBe(200)
    const paid = decodeXPaymentResponse(response.headers.get(x402Headers.paymentResponse) ?? '')
    const { mpp } = await challengeFor('/paid')
    const request = mpp.request as { amount: string; currency: string; recipient: string }
    const signature = await signProof(payer, {
      realm: mpp.realm,
      challengeId: mpp.id,
      amount: request.amount,
      currency: request.currency,
      recipient: request.recipient,
      digest: paid.transaction,
    })
    const authorization = serializeCredential({
      challenge: mpp,
      payload: { digest: paid.transaction, signature },
    })
    const before = calls
    expect(await codeOf(await postWith('/paid', { authorization }))).toBe('replay')
    expect(calls).toBe(before)
  })

  it('rejects a transaction that fails on chain, and serves nothing', async () => {
    const payer = chain.createTestWallet({ usdc: '0.01' })
    const before = calls
    // The coin holds 0.01 USDC; splitting 0.02 from it aborts on chain (gas is still charged).
    const { response } = await payX402('/paid', payer, { amount: 20_000n })
    expect(await codeOf(response)).toBe('transaction_failed')
    expect(calls).toBe(before)
  })

  it('validates the body before any payment: 400 names the field, nothing charged', async () => {
    const response = await fetch(`${served.base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [x402Headers.payment]: 'not even base64!' },
      body: JSON.stringify({ text: 42 }),
    })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ code: 'invalid_request_body', field: 'text' })
    const payer = chain.createTestWallet({ usdc: '1' })
    const ok = await payX402('/echo', payer, { body: JSON.stringify({ text: 'hi' }) })
    expect(ok.response.status).toBe(200)
    expect(await ok.response.json()).toMatchObject({ body: { text: 'hi' } })
  })

  it('reads a payment whose Move calls take primitive and vector type arguments: 200 or 402, never 500', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const sender = payer.toSuiAddress()
    const send = async (extra: (tx: Transaction) => void) => {
      const { requirement } = await challengeFor('/paid')
      const [usdc] = await coinRefs(chain.client, sender, chain.usdcType)
      const gas = await coinRefs(chain.client, sender, SUI_TYPE)
      const tx = new Transaction()
      tx.setSender(sender)
      tx.setGasPrice(1000)
      tx.setGasBudget(10_000_000n)
      tx.setGasPayment(gas.map(({ objectId, version, digest }) => ({ objectId, version, digest })))
      const [paid] = tx.splitCoins(tx.objectRef(usdc!), [tx.pure.u64(20_000n)])
      tx.transferObjects([paid!], tx.pure.address(seller))
      extra(tx)
      const bytes = await tx.build()
      const { signature } = await payer.signTransaction(bytes)
      const header = encodeXPayment({
        payload: {
          challengeId: requirement.extra?.challengeId as string,
          transaction: toBase64(bytes),
          signature,
        },
      })
      return postWith('/paid', { [x402Headers.payment]: header })
    }
    // A Balance<u64> made and destroyed: valid Move, the payment stands.
    const served = await send((tx) => {
      const [zero] = tx.moveCall({ target: '0x2::balance::zero', typeArguments: ['u64'] })
      tx.moveCall({
        target: '0x2::balance::destroy_zero',
        typeArguments: ['u64'],
        arguments: [zero!],
      })
    })
    expect(served.status).toBe(200)
    // A Balance<vector<u8>> left unused has no drop ability: the transaction fails on chain.
    const unused = await send((tx) => {
      tx.moveCall({ target: '0x2::balance::zero', typeArguments: ['vector<u8>'] })
    })
    expect(await codeOf(unused)).toBe('transaction_failed')
  })

  it('answers a malformed payment header with a 402 and a reason, never a 500', async () => {
    for (const header of ['%%%', 'e30=', Buffer.from('{"x402Version":1}').toString('base64')]) {
      const response = await postWith('/paid', { [x402Headers.payment]: header })
      expect(response.status).toBe(402)
      expect((await response.json()) as object).toHaveProperty('accepts')
    }
    const mpp = await postWith('/paid', { authorization: 'Payment !!!' })
    expect(await codeOf(mpp)).toBe('malformed_credential')
  })

  /**
   * Pays `path`, hangs up while its handler is held, releases it; the payment's record at the
   * hang-up (once it left `settled`, or after `waitMs`) and after the handler was released.
   */
  async function hangUpDuring(path: string, payer: Ed25519Keypair, waitMs = 5000) {
    const { requirement } = await challengeFor(path)
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    let release!: () => void
    const entered = new Promise<void>((resolve) => {
      hold = {
        entered: resolve,
        released: new Promise((done) => {
          release = done
        }),
      }
    })
    const buyer = new AbortController()
    const call = fetch(`${served.base}${path}`, {
      method: 'POST',
      headers: { [x402Headers.payment]: header },
      signal: buyer.signal,
    })
    await entered
    buyer.abort()
    await expect(call).rejects.toThrow()
    const digest = transactionDigest(fromBase64(decodeXPayment(header).payload.transaction))
    for (const deadline = Date.now() + waitMs; Date.now() < deadline; ) {
      const state = (await served.store.get(digest))?.state
      if (state !== 'settled' && state !== undefined) break
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const atHangUp = await served.store.get(digest)
    release()
    await new Promise((resolve) => setTimeout(resolve, 100))
    return { atHangUp, later: await served.store.get(digest) }
  }

  it('serves a buyer who hangs up while the handler runs: its work had started (protect, request.signal)', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    // Served once the handler is done (protect() sees it finish): until then the payment stays
    // settled, its serve lease held, so that a process dying meanwhile leaves it to the sweeper.
    const { atHangUp, later } = await hangUpDuring('/hold', payer, 300)
    expect(atHangUp?.state).toBe('settled')
    expect(later?.state).toBe('served')
    expect(await usdcOf(payer.toSuiAddress())).toBe(start - 20_000n)
  })

  it("owes a refund when the buyer hangs up before a `commit: 'manual'` handler commits", async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = commits.length
    const { atHangUp, later } = await hangUpDuring('/hold-manual', payer)
    expect(atHangUp?.state).toBe('refund_due')
    expect(atHangUp?.refund?.reason).toBe('the buyer hung up before the work started')
    // The handler's commit() came too late: it was told so, and the record did not change.
    expect(commits.slice(before)).toEqual([false])
    expect(later?.state).toBe('refund_due')
  })

  it('owes a refund when the paid handler fails', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { response } = await payX402('/boom', payer)
    expect(response.status).toBe(500)
    const due = await served.store.listRefundsDue()
    expect(due.map((r) => r.settlement?.payer)).toContain(payer.toSuiAddress())
  })
})

describe('attacks the paywall holds against', () => {
  it('a challenge of a cheap route presented on a dear route, in both dialects', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = calls
    const { requirement, mpp } = await challengeFor('/paid')
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    expect(await codeOf(await postWith('/dear', { [x402Headers.payment]: header }))).toBe(
      'invalid_challenge',
    )
    const { authorization } = await mppAuthorization(chain.client, payer, mpp)
    expect(await codeOf(await postWith('/dear', { authorization }))).toBe('invalid_challenge')
    expect(calls).toBe(before)
  })

  it('a coin named usdc::USDC from another package', async () => {
    const fake = `0x${'ab'.repeat(32)}::usdc::USDC`
    const payer = chain.createTestWallet({
      usdc: '0',
      extra: { coinType: fake, amount: 1_000_000n },
    })
    const before = calls
    const { response } = await payX402('/paid', payer, { coinType: fake })
    expect(await codeOf(response)).toBe('wrong_asset')
    expect(calls).toBe(before)
  })

  it('forged challenge ids, in both dialects', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = calls
    const { requirement, mpp } = await challengeFor('/paid')
    const real = String(requirement.extra?.challengeId)
    for (const forged of ['forged', `${real.slice(0, -2)}AA`, real.split('').reverse().join('')]) {
      const x402 = await payX402('/paid', payer, { challengeId: forged })
      expect(await codeOf(x402.response)).toBe('invalid_challenge')
      const { authorization } = await mppAuthorization(chain.client, payer, { ...mpp, id: forged })
      expect(await codeOf(await postWith('/paid', { authorization }))).toBe('invalid_challenge')
    }
    expect(calls).toBe(before)
  })

  it('a payment served through x402 presented again through MPP', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { response } = await payX402('/paid', payer)
    expect(response.status).toBe(200)
    const digest = decodeXPaymentResponse(
      response.headers.get(x402Headers.paymentResponse) ?? '',
    ).transaction
    const before = calls
    const { mpp } = await challengeFor('/paid')
    const request = mpp.request as { amount: string; currency: string; recipient: string }
    const signature = await signProof(payer, {
      realm: mpp.realm,
      challengeId: mpp.id,
      amount: request.amount,
      currency: request.currency,
      recipient: request.recipient,
      digest,
    })
    const authorization = serializeCredential({ challenge: mpp, payload: { digest, signature } })
    expect(await codeOf(await postWith('/paid', { authorization }))).toBe('replay')
    expect(calls).toBe(before)
  })
})
