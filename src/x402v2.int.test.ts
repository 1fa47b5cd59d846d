/**
 * x402 version 2 on a tollgate route, end to end: the field's own client (`@x402/core`, with a Sui
 * "exact" scheme registered through its public API and signing a real USDC transfer with
 * `@mysten/sui`) pays over `PAYMENT-SIGNATURE` against the ledger emulator; one digest is served at
 * most once across x402 v1, v2 and MPP; bad v2 input is a 402 with a stable code, never a 500.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { toBase64 } from '@mysten/sui/utils'
import { x402Client, x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { PaymentRequiredV2Schema } from '@x402/core/schemas'
import type { PaymentRequirements, SchemeNetworkClient } from '@x402/core/types'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestPaywall } from './engine/testHelpers.js'
import { parseChallenge, serializeCredential } from './mpp.js'
import { signProof } from './proof.js'
import { useTestLedger } from './testing/index.js'
import { SUI_TYPE } from './testing/ledger/state.js'
import { coinRefs } from './testing/ledger/testHelpers.js'
import { signTestPayment } from './testing/payments.js'
import { encodeXPayment, parsePaymentRequired, x402Headers } from './x402.js'
import {
  decodePaymentRequiredV2,
  decodePaymentResponseV2,
  encodePaymentSignature,
  type PaymentRequirementV2,
  x402V2Headers,
} from './x402v2.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
const chain = useTestLedger({ beforeAll, afterAll })
let served = 0
const payTo = new Ed25519Keypair().toSuiAddress()
const seller = useTestPaywall(chain, { payTo, secrets: [secret] }, (paywall) =>
  paywall.protect({ price: '0.02', description: 'a paid answer' }, async () => {
    served++
    return Response.json({ ok: true })
  }),
)

/** The Sui "exact" scheme for `@x402/core`'s client: a signed, unsubmitted USDC coin transfer. */
function suiExactScheme(payer: Ed25519Keypair): SchemeNetworkClient {
  return {
    scheme: 'exact',
    async createPaymentPayload(x402Version: number, requirements: PaymentRequirements) {
      const sender = payer.toSuiAddress()
      const [coin] = await coinRefs(chain.client, sender, requirements.asset)
      const gas = await coinRefs(chain.client, sender, SUI_TYPE)
      if (coin === undefined) throw new Error('the payer holds no coin of the asset')
      const tx = new Transaction()
      tx.setSender(sender)
      tx.setGasPrice(1000)
      tx.setGasBudget(10_000_000n)
      tx.setGasPayment(gas.map(({ objectId, version, digest }) => ({ objectId, version, digest })))
      const [paid] = tx.splitCoins(tx.objectRef(coin), [tx.pure.u64(BigInt(requirements.amount))])
      tx.transferObjects([paid!], tx.pure.address(requirements.payTo))
      const bytes = await tx.build()
      const { signature } = await payer.signTransaction(bytes)
      return { x402Version, payload: { transaction: toBase64(bytes), signature } }
    },
  }
}

/** `@x402/core`'s client with the Sui scheme registered for `payer`. */
function buyerFor(payer: Ed25519Keypair): x402Client {
  return (
    new x402Client()
      .register('sui:mainnet', suiExactScheme(payer))
      // Native USDC on Sui is not one of the client's built-in assets: allowed here, capped at 0.05.
      .setSpendControls({
        allowedAssets: [
          { network: 'sui:mainnet', asset: chain.usdcType, maxAmountPerPayment: '50000' },
        ],
      })
  )
}

async function unpaid() {
  const response = await fetch(`${seller.base}/paid`)
  expect(response.status).toBe(402)
  const body = parsePaymentRequired(await response.json())
  const v2 = decodePaymentRequiredV2(response.headers.get(x402V2Headers.paymentRequired) ?? '')
  const mpp = parseChallenge(response.headers.get('www-authenticate') ?? '')
  return { response, body, v2, accepted: v2.accepts[0] as PaymentRequirementV2, mpp }
}

const usdcOf = (address: string) => chain.usdcBalance(address)

async function codeOf(response: Response): Promise<string | undefined> {
  expect(response.status).toBe(402)
  return ((await response.json()) as { code?: string }).code
}

const paidWith = (headers: Record<string, string>) => fetch(`${seller.base}/paid`, { headers })

/** A signed transfer answering the route (not submitted). */
async function signed(payer: Ed25519Keypair) {
  return signTestPayment(chain.client, payer, {
    to: payTo,
    amount: 20_000n,
    coinType: chain.usdcType,
  })
}

async function v2Header(payment: { transaction: string; signature: string }) {
  const { v2, accepted } = await unpaid()
  return encodePaymentSignature({
    x402Version: 2,
    resource: v2.resource,
    accepted,
    payload: { transaction: payment.transaction, signature: payment.signature },
  })
}

async function v1Header(payment: { transaction: string; signature: string }) {
  const { body } = await unpaid()
  return encodeXPayment({
    payload: {
      challengeId: String(body.accepts[0]?.extra?.challengeId),
      transaction: payment.transaction,
      signature: payment.signature,
    },
  })
}

async function mppHeader(payer: Ed25519Keypair, digest: string) {
  const { mpp } = await unpaid()
  const request = mpp.request as { amount: string; currency: string; recipient: string }
  const signature = await signProof(payer, {
    realm: mpp.realm,
    challengeId: mpp.id,
    amount: request.amount,
    currency: request.currency,
    recipient: request.recipient,
    digest,
  })
  return serializeCredential({ challenge: mpp, payload: { digest, signature } })
}

describe('the 402 offers x402 version 2', () => {
  it('carries PAYMENT-REQUIRED that @x402/core validates and that agrees with the v1 body', async () => {
    const { response, body, v2 } = await unpaid()
    const header = response.headers.get(x402V2Headers.paymentRequired) ?? ''
    const theirs = decodePaymentRequiredHeader(header)
    expect(PaymentRequiredV2Schema.safeParse(theirs).success).toBe(true)
    const v1 = body.accepts[0]
    expect(v2).toEqual({
      x402Version: 2,
      error: 'Payment required',
      resource: {
        url: `${seller.base}/paid`,
        description: 'a paid answer',
        mimeType: 'application/json',
      },
      accepts: [
        {
          scheme: 'exact',
          network: 'sui:mainnet',
          amount: v1?.maxAmountRequired,
          asset: v1?.asset,
          payTo: v1?.payTo,
          maxTimeoutSeconds: v1?.maxTimeoutSeconds,
          extra: { challengeId: v1?.extra?.challengeId },
        },
      ],
    })
  })
})

describe("@x402/core's client pays a tollgate route over version 2", () => {
  it('signs with a registered Sui scheme, is served once with PAYMENT-RESPONSE', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const http = new x402HTTPClient(buyerFor(payer))
    const first = await fetch(`${seller.base}/paid`)
    expect(first.status).toBe(402)
    const required = http.getPaymentRequiredResponse(
      (name) => first.headers.get(name),
      await first.json(),
    )
    expect(required.x402Version).toBe(2)
    const payload = await http.createPaymentPayload(required)
    const headers = http.encodePaymentSignatureHeader(payload)
    expect(Object.keys(headers)).toEqual(['PAYMENT-SIGNATURE'])

    const before = await usdcOf(payTo)
    const servedBefore = served
    const paid = await paidWith(headers)
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ ok: true })
    expect(paid.headers.get(x402Headers.paymentResponse)).toBeNull()
    const settlement = http.getPaymentSettleResponse((name) => paid.headers.get(name))
    expect(settlement).toMatchObject({
      success: true,
      network: 'sui:mainnet',
      payer: payer.toSuiAddress(),
    })
    expect(decodePaymentResponseV2(paid.headers.get('payment-response') ?? '')).toEqual(settlement)
    expect(await usdcOf(payTo)).toBe(before + 20_000n)
    expect(served).toBe(servedBefore + 1)
    expect((await seller.store.get(settlement.transaction))?.state).toBe('served')

    const again = await paidWith(headers)
    expect(await codeOf(again)).toBe('replay')
    expect(served).toBe(servedBefore + 1)
  })
})

describe('@x402/fetch recognises our version 2 402', () => {
  it('pays it with PAYMENT-SIGNATURE and reads PAYMENT-RESPONSE', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const sent: Headers[] = []
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init)
      sent.push(request.headers)
      return fetch(request)
    }
    const pay = wrapFetchWithPayment(recording, buyerFor(payer))
    const before = await usdcOf(payTo)
    const response = await pay(`${seller.base}/paid`)
    expect(response.status).toBe(200)
    expect(sent).toHaveLength(2)
    expect(sent[1]?.has('payment-signature')).toBe(true)
    expect(sent[1]?.has('x-payment')).toBe(false)
    const settlement = decodePaymentResponseHeader(response.headers.get('payment-response') ?? '')
    expect(settlement).toMatchObject({ success: true, payer: payer.toSuiAddress() })
    expect(await usdcOf(payTo)).toBe(before + 20_000n)
  })
})

describe('one digest is served at most once across v1, v2 and MPP', () => {
  it('v2, then the same transfer as v1: replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const payment = await signed(payer)
    expect(
      (await paidWith({ [x402V2Headers.paymentSignature]: await v2Header(payment) })).status,
    ).toBe(200)
    const count = served
    const v1 = await paidWith({ [x402Headers.payment]: await v1Header(payment) })
    expect(await codeOf(v1)).toBe('replay')
    expect(served).toBe(count)
  })

  it('v2, then its digest as MPP: replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const payment = await signed(payer)
    const paid = await paidWith({ [x402V2Headers.paymentSignature]: await v2Header(payment) })
    expect(paid.status).toBe(200)
    const digest = decodePaymentResponseV2(paid.headers.get('payment-response') ?? '').transaction
    const count = served
    const mpp = await paidWith({ authorization: await mppHeader(payer, digest) })
    expect(await codeOf(mpp)).toBe('replay')
    expect(served).toBe(count)
  })

  it('v1, then the same transfer as v2: replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const payment = await signed(payer)
    expect((await paidWith({ [x402Headers.payment]: await v1Header(payment) })).status).toBe(200)
    const count = served
    const v2 = await paidWith({ [x402V2Headers.paymentSignature]: await v2Header(payment) })
    expect(await codeOf(v2)).toBe('replay')
    expect(served).toBe(count)
  })

  it('MPP, then the same transfer as v2: replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const payment = await signed(payer)
    const executed = await chain.client.core.executeTransaction({
      transaction: payment.bytes,
      signatures: [payment.signature],
    })
    const digest = executed.Transaction?.digest ?? ''
    expect((await paidWith({ authorization: await mppHeader(payer, digest) })).status).toBe(200)
    const count = served
    const v2 = await paidWith({ [x402V2Headers.paymentSignature]: await v2Header(payment) })
    expect(await codeOf(v2)).toBe('replay')
    expect(served).toBe(count)
  })
})

describe('bad version 2 input is a 402 with a stable code', () => {
  const transaction = Buffer.alloc(150, 3).toString('base64')
  const signature = Buffer.alloc(97, 1).toString('base64')
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')

  it.each<[string, (accepted: PaymentRequirementV2) => string, string]>([
    ['not base64', () => '%%%not-base64%%%', 'invalid_encoding'],
    [
      'base64 of text that is not JSON',
      () => Buffer.from('{nope').toString('base64'),
      'invalid_json',
    ],
    [
      'x402Version 1',
      (accepted) => encode({ x402Version: 1, accepted, payload: { transaction, signature } }),
      'unsupported_version',
    ],
    [
      'no accepted',
      () => encode({ x402Version: 2, payload: { transaction, signature } }),
      'invalid_payload',
    ],
    [
      'a lower amount',
      (accepted) =>
        encode({
          x402Version: 2,
          accepted: { ...accepted, amount: '1' },
          payload: { transaction, signature },
        }),
      'requirements_mismatch',
    ],
    [
      'another payTo',
      (accepted) =>
        encode({
          x402Version: 2,
          accepted: { ...accepted, payTo: `0x${'ab'.repeat(32)}` },
          payload: { transaction, signature },
        }),
      'requirements_mismatch',
    ],
    [
      'another network',
      (accepted) =>
        encode({
          x402Version: 2,
          accepted: { ...accepted, network: 'sui:testnet' },
          payload: { transaction, signature },
        }),
      'unsupported_network',
    ],
    [
      'a challenge id this server did not issue',
      (accepted) =>
        encode({
          x402Version: 2,
          accepted: { ...accepted, extra: { challengeId: 'forged-id' } },
          payload: { transaction, signature },
        }),
      'invalid_challenge',
    ],
    [
      'a transaction that is not a transaction',
      (accepted) => encode({ x402Version: 2, accepted, payload: { transaction, signature } }),
      'invalid_transaction',
    ],
  ])('%s', async (_name, make, code) => {
    const { accepted } = await unpaid()
    const count = served
    const response = await paidWith({ [x402V2Headers.paymentSignature]: make(accepted) })
    const explained = decodePaymentRequiredV2(
      response.headers.get(x402V2Headers.paymentRequired) ?? '',
    )
    expect(await codeOf(response)).toBe(code)
    expect(explained.error).toBe(code)
    expect(explained.accepts[0]).toMatchObject({ amount: '20000', payTo })
    expect(served).toBe(count)
  })
})
