/**
 * The wire, byte for byte: every answer the paywall writes — the 402 of each way to pay, the
 * success headers of each, and its refusals — pinned with inline snapshots, through every adapter.
 * Every framework must match the same snapshot (Vitest refuses two different snapshots at one
 * place), so a byte that changes in one adapter, or in the engine, fails here.
 *
 * Nothing in these answers varies between runs: the clock is fixed (`now`), the challenge secret,
 * the seller's and the buyer's keys are fixed, the public URL is fixed (`publicBaseUrl`, so the
 * port does not show), and each framework pays on its own fresh ledger emulator, which numbers
 * objects from a fixed seed — so the same transactions, signatures and digests come out in every
 * run and every framework. No field needs a placeholder.
 *
 * Only headers that belong to the transport or the framework are left out (see `transport` and
 * `handlerHeaders`); on a paid answer the body is the handler's, and is left out too.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createLedger, createMemoryStore, Mpp, type SellerOptions, X402, X402V2 } from 'tollgate'
import {
  mppAuthorization,
  signTestPayment,
  useTestLedger,
  x402PaymentHeader,
} from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Framework, frameworks, type StartedApp, startApp } from './apps.js'

const secret = 'a-fixed-challenge-secret-of-32-bytes-or-more'
const publicBaseUrl = 'https://api.example.com'
/** 2030-01-01T00:00:00Z: every expiry and receipt timestamp is computed from it. */
const clock = Date.UTC(2030, 0, 1)
const sellerKey = Ed25519Keypair.fromSecretKey(new Uint8Array(32).fill(7))
const buyerKey = Ed25519Keypair.fromSecretKey(new Uint8Array(32).fill(9))

/** Headers that belong to the transport or the framework, not to the paywall. */
const transport = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'x-powered-by'])
/** Headers of a paid answer that the seller's handler (through its framework) writes. */
const handlerHeaders = new Set(['content-type', 'content-length', 'etag'])

/** Header values that are base64 JSON, shown decoded under the raw value for the reader. */
const base64Json = new Set(['payment-required', 'x-payment-response', 'payment-response'])

/**
 * An answer as text: the status, the headers (sorted, names in lower case, as `fetch` gives them)
 * and the body exactly as received. For `paid` answers, the handler's headers and body are left
 * out. Base64 JSON headers are followed by a `# decoded` line (derived from the raw value).
 */
async function wire(response: Response, paid = false): Promise<string> {
  const lines = [`HTTP ${response.status}`]
  const headers = [...response.headers]
    .filter(([name]) => !transport.has(name) && !(paid && handlerHeaders.has(name)))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  for (const [name, value] of headers) {
    lines.push(`${name}: ${value}`)
    if (base64Json.has(name) || name === 'payment-receipt') {
      lines.push(`# decoded: ${new TextDecoder().decode(fromBase64Any(value))}`)
    }
  }
  const body = await response.text()
  if (!paid) lines.push('', body)
  return lines.join('\n')
}

/** Decodes base64 or base64url (the receipt is base64url). */
function fromBase64Any(value: string): Uint8Array {
  const standard = value.replaceAll('-', '+').replaceAll('_', '/')
  return Uint8Array.from(atob(standard.padEnd(Math.ceil(standard.length / 4) * 4, '=')), (c) =>
    c.charCodeAt(0),
  )
}

describe.each(frameworks)('%s adapter', (framework: Framework) => {
  // A fresh ledger per framework: its objects are numbered from the same seed, so every
  // framework sees the same coins, transactions and digests.
  const chain = useTestLedger({ beforeAll, afterAll })
  /** The app offering both ways to pay, then the ones offering only x402 or only MPP. */
  let both: StartedApp
  let x402Only: StartedApp
  let mppOnly: StartedApp

  beforeAll(async () => {
    chain.faucet({ address: buyerKey.toSuiAddress(), usdc: '1' })
    const options: Omit<SellerOptions, 'routes'> = {
      payTo: sellerKey.toSuiAddress(),
      ledger: createLedger({ url: chain.url }),
      store: createMemoryStore(),
      secrets: [secret],
      publicBaseUrl,
      maxBodyBytes: 4096,
      // The sweeper reads the fixed clock against the store's real one: off, it has no part here.
      leaseSweep: false,
      now: () => clock,
    }
    both = await startApp(framework, options)
    x402Only = await startApp(framework, { ...options, offer: 'x402' })
    mppOnly = await startApp(framework, { ...options, offer: 'mpp' })
  })

  afterAll(async () => {
    await Promise.all([both?.close(), x402Only?.close(), mppOnly?.close()])
  })

  const post = (
    app: StartedApp,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ) =>
    fetch(app.url + path, {
      method: 'POST',
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body }),
    })

  /** The terms of the route's 402, in each way to pay. */
  async function terms(path: string, body?: string) {
    const response = await post(both, path, {}, body)
    expect(response.status).toBe(402)
    const v1 = X402.parsePaymentRequired(await response.json()).accepts[0]!
    const v2 = X402V2.decodePaymentRequiredV2(
      response.headers.get(X402V2.x402V2Headers.paymentRequired) ?? '',
    ).accepts[0]!
    const mpp = Mpp.parseChallenge(response.headers.get('www-authenticate') ?? '')
    return { v1, v2, mpp }
  }

  /** A `PAYMENT-SIGNATURE` for the v2 terms (changed by `edit`, to test refusals). */
  async function v2Header(
    accepted: X402V2.PaymentRequirementV2,
    edit: Partial<X402V2.PaymentRequirementV2> = {},
  ) {
    const signed = await signTestPayment(chain.client, buyerKey, {
      to: accepted.payTo,
      amount: BigInt(accepted.amount),
      coinType: accepted.asset,
    })
    return X402V2.encodePaymentSignature({
      x402Version: 2,
      accepted: { ...accepted, ...edit },
      payload: { transaction: signed.transaction, signature: signed.signature },
    })
  }

  describe('the 402', () => {
    it('offers x402 v1 (body), x402 v2 (PAYMENT-REQUIRED) and MPP (WWW-Authenticate) at once', async () => {
      expect(await wire(await post(both, '/v1/things/1'))).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 708
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQYXltZW50IHJlcXVpcmVkIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"Payment required","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"Payment required","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/payment-required","title":"Payment Required","status":402,"detail":"This resource costs 0.020000 USDC on sui:mainnet. Pay with X-PAYMENT (x402) or Authorization: Payment (MPP)."}"
      `)
    })

    it('offers x402 alone', async () => {
      expect(await wire(await post(x402Only, '/v1/things/1'))).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 676
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQYXltZW50IHJlcXVpcmVkIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"Payment required","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}

        {"x402Version":1,"error":"Payment required","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/payment-required","title":"Payment Required","status":402,"detail":"This resource costs 0.020000 USDC on sui:mainnet. Pay with X-PAYMENT (x402)."}"
      `)
    })

    it('offers MPP alone', async () => {
      expect(await wire(await post(mppOnly, '/v1/things/1'))).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 200
        content-type: application/json
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"type":"https://paymentauth.org/problems/payment-required","title":"Payment Required","status":402,"detail":"This resource costs 0.020000 USDC on sui:mainnet. Pay with Authorization: Payment (MPP)."}"
      `)
    })

    it('prices the per-route pay() form', async () => {
      expect(await wire(await post(both, '/v1/quote'))).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 698
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQYXltZW50IHJlcXVpcmVkIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvcXVvdGUiLCJkZXNjcmlwdGlvbiI6IiIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjEwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiJETnlWcklQcEZBTlNRNmtCS204RTJUcDRHRmEyTXRvc1AxdVlZeExzT3VJIn19XX0=
        # decoded: {"x402Version":2,"error":"Payment required","resource":{"url":"https://api.example.com/v1/quote","description":"","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"10000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"DNyVrIPpFANSQ6kBKm8E2Tp4GFa2MtosP1uYYxLsOuI"}}]}
        www-authenticate: Payment id="DNyVrIPpFANSQ6kBKm8E2Tp4GFa2MtosP1uYYxLsOuI", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIxMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3F1b3RlIn0"

        {"x402Version":1,"error":"Payment required","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"10000","resource":"https://api.example.com/v1/quote","description":"","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"DNyVrIPpFANSQ6kBKm8E2Tp4GFa2MtosP1uYYxLsOuI"}}],"type":"https://paymentauth.org/problems/payment-required","title":"Payment Required","status":402,"detail":"This resource costs 0.010000 USDC on sui:mainnet. Pay with X-PAYMENT (x402) or Authorization: Payment (MPP)."}"
      `)
    })
  })

  describe('x402 v1 (X-PAYMENT)', () => {
    let header: string

    it('serves a payment with X-PAYMENT-RESPONSE', async () => {
      header = await x402PaymentHeader(chain.client, buyerKey, (await terms('/v1/things/7')).v1)
      const response = await post(both, '/v1/things/7', { [X402.x402Headers.payment]: header })
      expect(await wire(response, true)).toMatchInlineSnapshot(`
        "HTTP 200
        x-payment-response: eyJzdWNjZXNzIjp0cnVlLCJ0cmFuc2FjdGlvbiI6Iko1Qm1OSFhmZ2VGTlZNQ2V2c2tpS1dvaWJFVXZHR0NaRTRvcTFXcVdxUjJXIiwibmV0d29yayI6InN1aTptYWlubmV0IiwicGF5ZXIiOiIweDZjODg5MDEzZmIxNjVhM2E5OTFhNjJkNzA2YWYyNDM1ZDMxNDVhMjY1NTM0NzA3NGRiNmZjOTRiMGViOTdhZDMifQ==
        # decoded: {"success":true,"transaction":"J5BmNHXfgeFNVMCevskiKWoibEUvGGCZE4oq1WqWqR2W","network":"sui:mainnet","payer":"0x6c889013fb165a3a991a62d706af2435d3145a2655347074db6fc94b0eb97ad3"}"
      `)
    })

    it('refuses its replay', async () => {
      const response = await post(both, '/v1/things/7', { [X402.x402Headers.payment]: header })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 666
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJyZXBsYXkiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvNyIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiJvRk16SjYtSWhvOEthaU05TEdINHlDZ2djU0k1Ym5TU0dkLUhyMmFlaExBIn19XX0=
        # decoded: {"x402Version":2,"error":"replay","resource":{"url":"https://api.example.com/v1/things/7","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"oFMzJ6-Iho8KaiM9LGH4yCggcSI5bnSSGd-Hr2aehLA"}}]}
        www-authenticate: Payment id="oFMzJ6-Iho8KaiM9LGH4yCggcSI5bnSSGd-Hr2aehLA", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy83In0"

        {"x402Version":1,"error":"This payment was already used.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/7","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"oFMzJ6-Iho8KaiM9LGH4yCggcSI5bnSSGd-Hr2aehLA"}}],"type":"https://paymentauth.org/problems/verification-failed","title":"Verification Failed","status":402,"detail":"This payment was already used.","code":"replay"}"
      `)
    })

    it('refuses a malformed header', async () => {
      const response = await post(both, '/v1/things/1', { [X402.x402Headers.payment]: '%%%' })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 708
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnZhbGlkX2VuY29kaW5nIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"invalid_encoding","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The X-PAYMENT header is not canonical base64.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/malformed-credential","title":"Malformed Credential","status":402,"detail":"The X-PAYMENT header is not canonical base64.","code":"invalid_encoding"}"
      `)
    })

    it('refuses a wrong amount', async () => {
      const { v1 } = await terms('/v1/things/1')
      const underpaid = await x402PaymentHeader(chain.client, buyerKey, v1, { amount: 10_000n })
      const response = await post(both, '/v1/things/1', { [X402.x402Headers.payment]: underpaid })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 703
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnN1ZmZpY2llbnRfYW1vdW50IiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"insufficient_amount","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The transaction pays less than the price.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/payment-insufficient","title":"Payment Insufficient","status":402,"detail":"The transaction pays less than the price.","code":"insufficient_amount"}"
      `)
    })

    it('refuses a payment to another recipient', async () => {
      const { v1 } = await terms('/v1/things/1')
      const elsewhere = await x402PaymentHeader(chain.client, buyerKey, v1, {
        to: buyerKey.toSuiAddress(),
      })
      const response = await post(both, '/v1/things/1', { [X402.x402Headers.payment]: elsewhere })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 707
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJ3cm9uZ19yZWNpcGllbnQiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvMSIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiIxc1ZFbmt5VkdxTkNRZGN4MW1rTWJ0T0dSZFZOVXdPbGVqYWZkZ0MwOGVzIn19XX0=
        # decoded: {"x402Version":2,"error":"wrong_recipient","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The transaction pays nothing to the recipient.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/verification-failed","title":"Verification Failed","status":402,"detail":"The transaction pays nothing to the recipient.","code":"wrong_recipient"}"
      `)
    })

    it('refuses a challenge id it did not issue', async () => {
      const { v1 } = await terms('/v1/things/1')
      const forged = await x402PaymentHeader(chain.client, buyerKey, v1, {
        challengeId: 'A'.repeat(43),
      })
      const response = await post(both, '/v1/things/1', { [X402.x402Headers.payment]: forged })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 709
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnZhbGlkX2NoYWxsZW5nZSIsInJlc291cmNlIjp7InVybCI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIiwiZGVzY3JpcHRpb24iOiJhIHRoaW5nIiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6InN1aTptYWlubmV0IiwiYW1vdW50IjoiMjAwMDAiLCJhc3NldCI6IjB4ZGJhMzQ2NzJlMzBjYjA2NWIxZjkzZTNhYjU1MzE4NzY4ZmQ2ZmVmNjZjMTU5NDJjOWY3Y2I4NDZlMmY5MDBlNzo6dXNkYzo6VVNEQyIsInBheVRvIjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIiwibWF4VGltZW91dFNlY29uZHMiOjYwLCJleHRyYSI6eyJjaGFsbGVuZ2VJZCI6IjFzVkVua3lWR3FOQ1FkY3gxbWtNYnRPR1JkVk5Vd09sZWphZmRnQzA4ZXMifX1dfQ==
        # decoded: {"x402Version":2,"error":"invalid_challenge","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"This challenge was not issued for this resource.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/invalid-challenge","title":"Invalid Challenge","status":402,"detail":"This challenge was not issued for this resource.","code":"invalid_challenge"}"
      `)
    })

    it('refuses a payment for another route', async () => {
      const { v1 } = await terms('/v1/things/2')
      const other = await x402PaymentHeader(chain.client, buyerKey, v1)
      const response = await post(both, '/v1/things/3', { [X402.x402Headers.payment]: other })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 709
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnZhbGlkX2NoYWxsZW5nZSIsInJlc291cmNlIjp7InVybCI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8zIiwiZGVzY3JpcHRpb24iOiJhIHRoaW5nIiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6InN1aTptYWlubmV0IiwiYW1vdW50IjoiMjAwMDAiLCJhc3NldCI6IjB4ZGJhMzQ2NzJlMzBjYjA2NWIxZjkzZTNhYjU1MzE4NzY4ZmQ2ZmVmNjZjMTU5NDJjOWY3Y2I4NDZlMmY5MDBlNzo6dXNkYzo6VVNEQyIsInBheVRvIjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIiwibWF4VGltZW91dFNlY29uZHMiOjYwLCJleHRyYSI6eyJjaGFsbGVuZ2VJZCI6IlNjdzlWWU95TzlRWXNIYm55a29hWFhmbzFoRU5ZWTVzeUE5d3pEYjJCWEUifX1dfQ==
        # decoded: {"x402Version":2,"error":"invalid_challenge","resource":{"url":"https://api.example.com/v1/things/3","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"Scw9VYOyO9QYsHbnykoaXXfo1hENYY5syA9wzDb2BXE"}}]}
        www-authenticate: Payment id="Scw9VYOyO9QYsHbnykoaXXfo1hENYY5syA9wzDb2BXE", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8zIn0"

        {"x402Version":1,"error":"This challenge was not issued for this resource.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/3","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"Scw9VYOyO9QYsHbnykoaXXfo1hENYY5syA9wzDb2BXE"}}],"type":"https://paymentauth.org/problems/invalid-challenge","title":"Invalid Challenge","status":402,"detail":"This challenge was not issued for this resource.","code":"invalid_challenge"}"
      `)
    })
  })

  describe('x402 v2 (PAYMENT-SIGNATURE)', () => {
    let header: string

    it('serves a payment with PAYMENT-RESPONSE', async () => {
      header = await v2Header((await terms('/v1/things/8')).v2)
      const response = await post(both, '/v1/things/8', {
        [X402V2.x402V2Headers.paymentSignature]: header,
      })
      expect(await wire(response, true)).toMatchInlineSnapshot(`
        "HTTP 200
        payment-response: eyJzdWNjZXNzIjp0cnVlLCJ0cmFuc2FjdGlvbiI6IjdzWGdkQ1dCa1BVdGg0akpzWlhRUTdqcWVmZXFiTUZHUVVCZENMaVlQeDFBIiwibmV0d29yayI6InN1aTptYWlubmV0IiwicGF5ZXIiOiIweDZjODg5MDEzZmIxNjVhM2E5OTFhNjJkNzA2YWYyNDM1ZDMxNDVhMjY1NTM0NzA3NGRiNmZjOTRiMGViOTdhZDMifQ==
        # decoded: {"success":true,"transaction":"7sXgdCWBkPUth4jJsZXQQ7jqefeqbMFGQUBdCLiYPx1A","network":"sui:mainnet","payer":"0x6c889013fb165a3a991a62d706af2435d3145a2655347074db6fc94b0eb97ad3"}"
      `)
    })

    it('refuses its replay', async () => {
      const response = await post(both, '/v1/things/8', {
        [X402V2.x402V2Headers.paymentSignature]: header,
      })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 666
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJyZXBsYXkiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvOCIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiJLcUdmU194dmZzY2Rzem5yNUdTZEEzRV96WFEyRVBjTElLN2xXM0tqZklVIn19XX0=
        # decoded: {"x402Version":2,"error":"replay","resource":{"url":"https://api.example.com/v1/things/8","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"KqGfS_xvfscdsznr5GSdA3E_zXQ2EPcLIK7lW3KjfIU"}}]}
        www-authenticate: Payment id="KqGfS_xvfscdsznr5GSdA3E_zXQ2EPcLIK7lW3KjfIU", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy84In0"

        {"x402Version":1,"error":"This payment was already used.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/8","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"KqGfS_xvfscdsznr5GSdA3E_zXQ2EPcLIK7lW3KjfIU"}}],"type":"https://paymentauth.org/problems/verification-failed","title":"Verification Failed","status":402,"detail":"This payment was already used.","code":"replay"}"
      `)
    })

    it('refuses a malformed header', async () => {
      const response = await post(both, '/v1/things/1', {
        [X402V2.x402V2Headers.paymentSignature]: 'not-base64!',
      })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 724
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnZhbGlkX2VuY29kaW5nIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"invalid_encoding","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The PAYMENT-SIGNATURE header is not canonical base64.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/malformed-credential","title":"Malformed Credential","status":402,"detail":"The PAYMENT-SIGNATURE header is not canonical base64.","code":"invalid_encoding"}"
      `)
    })

    it('refuses accepted terms that are not the route’s (a wrong amount)', async () => {
      const { v2 } = await terms('/v1/things/1')
      const response = await post(both, '/v1/things/1', {
        [X402V2.x402V2Headers.paymentSignature]: await v2Header(v2, { amount: '10000' }),
      })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 729
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJyZXF1aXJlbWVudHNfbWlzbWF0Y2giLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvMSIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiIxc1ZFbmt5VkdxTkNRZGN4MW1rTWJ0T0dSZFZOVXdPbGVqYWZkZ0MwOGVzIn19XX0=
        # decoded: {"x402Version":2,"error":"requirements_mismatch","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The accepted requirement's amount is not this route's.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/verification-failed","title":"Verification Failed","status":402,"detail":"The accepted requirement's amount is not this route's.","code":"requirements_mismatch"}"
      `)
    })
  })

  describe('MPP charge (Authorization: Payment)', () => {
    let authorization: string

    it('serves a payment with Payment-Receipt', async () => {
      const { mpp } = await terms('/v1/things/9')
      ;({ authorization } = await mppAuthorization(chain.client, buyerKey, mpp))
      const response = await post(both, '/v1/things/9', { authorization })
      expect(await wire(response, true)).toMatchInlineSnapshot(`
        "HTTP 200
        payment-receipt: eyJzdGF0dXMiOiJzdWNjZXNzIiwibWV0aG9kIjoic3VpIiwidGltZXN0YW1wIjoiMjAzMC0wMS0wMVQwMDowMDowMC4wMDBaIiwicmVmZXJlbmNlIjoiQ21NZnI3bkUxbmZGV3h4SlFLQnRiVTI1aEphNUdmZTRiV2FoNzZNOVFQdTMifQ
        # decoded: {"status":"success","method":"sui","timestamp":"2030-01-01T00:00:00.000Z","reference":"CmMfr7nE1nfFWxxJQKBtbU25hJa5Gfe4bWah76M9QPu3"}"
      `)
    })

    it('refuses its replay', async () => {
      const response = await post(both, '/v1/things/9', { authorization })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 666
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJyZXBsYXkiLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvOSIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiJJYUJWLXI3T2wyQWdQSlVxWFBnMldVcGR4RzhjbkhYUThTM3U5RmdyQ1FjIn19XX0=
        # decoded: {"x402Version":2,"error":"replay","resource":{"url":"https://api.example.com/v1/things/9","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"IaBV-r7Ol2AgPJUqXPg2WUpdxG8cnHXQ8S3u9FgrCQc"}}]}
        www-authenticate: Payment id="IaBV-r7Ol2AgPJUqXPg2WUpdxG8cnHXQ8S3u9FgrCQc", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy85In0"

        {"x402Version":1,"error":"This payment was already used.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/9","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"IaBV-r7Ol2AgPJUqXPg2WUpdxG8cnHXQ8S3u9FgrCQc"}}],"type":"https://paymentauth.org/problems/verification-failed","title":"Verification Failed","status":402,"detail":"This payment was already used.","code":"replay"}"
      `)
    })

    it('refuses a malformed credential', async () => {
      const response = await post(both, '/v1/things/1', { authorization: 'Payment !!!' })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 726
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJtYWxmb3JtZWRfY3JlZGVudGlhbCIsInJlc291cmNlIjp7InVybCI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIiwiZGVzY3JpcHRpb24iOiJhIHRoaW5nIiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6InN1aTptYWlubmV0IiwiYW1vdW50IjoiMjAwMDAiLCJhc3NldCI6IjB4ZGJhMzQ2NzJlMzBjYjA2NWIxZjkzZTNhYjU1MzE4NzY4ZmQ2ZmVmNjZjMTU5NDJjOWY3Y2I4NDZlMmY5MDBlNzo6dXNkYzo6VVNEQyIsInBheVRvIjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIiwibWF4VGltZW91dFNlY29uZHMiOjYwLCJleHRyYSI6eyJjaGFsbGVuZ2VJZCI6IjFzVkVua3lWR3FOQ1FkY3gxbWtNYnRPR1JkVk5Vd09sZWphZmRnQzA4ZXMifX1dfQ==
        # decoded: {"x402Version":2,"error":"malformed_credential","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"The Authorization header is not canonical base64url.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/malformed-credential","title":"Malformed Credential","status":402,"detail":"The Authorization header is not canonical base64url.","code":"malformed_credential"}"
      `)
    })

    it('refuses a wrong amount', async () => {
      const { mpp } = await terms('/v1/things/1')
      const underpaid = await mppAuthorization(chain.client, buyerKey, mpp, { amount: 10_000n })
      const response = await post(both, '/v1/things/1', { authorization: underpaid.authorization })
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 402
        cache-control: no-store
        content-length: 711
        content-type: application/json
        payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJpbnN1ZmZpY2llbnRfYW1vdW50IiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vdjEvdGhpbmdzLzEiLCJkZXNjcmlwdGlvbiI6ImEgdGhpbmciLCJtaW1lVHlwZSI6ImFwcGxpY2F0aW9uL2pzb24ifSwiYWNjZXB0cyI6W3sic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoic3VpOm1haW5uZXQiLCJhbW91bnQiOiIyMDAwMCIsImFzc2V0IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwicGF5VG8iOiIweGEwY2NjOGJjYzgzZjZjNjI4MzQwMTM0Zjg1NDZhMjFlMDYxOGZkMWFhYTAyNDMyYmJhNDU0YzRhMmMyMjMzZGEiLCJtYXhUaW1lb3V0U2Vjb25kcyI6NjAsImV4dHJhIjp7ImNoYWxsZW5nZUlkIjoiMXNWRW5reVZHcU5DUWRjeDFta01idE9HUmRWTlV3T2xlamFmZGdDMDhlcyJ9fV19
        # decoded: {"x402Version":2,"error":"insufficient_amount","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
        www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

        {"x402Version":1,"error":"Less than the price arrived at the recipient.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/payment-insufficient","title":"Payment Insufficient","status":402,"detail":"Less than the price arrived at the recipient.","code":"insufficient_amount"}"
      `)
    })
  })

  describe('before any payment', () => {
    it('refuses a body the route does not accept with 400', async () => {
      const { v1 } = await terms('/v1/echo', JSON.stringify({ text: 'hi' }))
      const header = await x402PaymentHeader(chain.client, buyerKey, v1)
      const response = await post(
        both,
        '/v1/echo',
        { [X402.x402Headers.payment]: header },
        JSON.stringify({ text: 42 }),
      )
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 400
        cache-control: no-store
        content-length: 161
        content-type: application/problem+json

        {"type":"about:blank","title":"Bad Request","status":400,"detail":"Invalid input: expected string, received number","code":"invalid_request_body","field":"text"}"
      `)
    })

    it('refuses a declared body over the limit with 413', async () => {
      const response = await post(
        both,
        '/v1/things/1',
        {},
        JSON.stringify({ pad: 'x'.repeat(5000) }),
      )
      expect(await wire(response)).toMatchInlineSnapshot(`
        "HTTP 413
        cache-control: no-store
        content-length: 143
        content-type: application/problem+json

        {"type":"about:blank","title":"Payload Too Large","status":413,"detail":"The request body is over 4096 bytes.","code":"request_body_too_large"}"
      `)
    })
  })

  describe('when the ledger cannot be reached', () => {
    it('asks the buyer to present the same payment again (settlement_pending, Retry-After)', async () => {
      const { v1 } = await terms('/v1/things/1')
      const header = await x402PaymentHeader(chain.client, buyerKey, v1)
      chain.faults.unavailable = true
      try {
        const response = await post(both, '/v1/things/1', { [X402.x402Headers.payment]: header })
        expect(await wire(response)).toMatchInlineSnapshot(`
          "HTTP 402
          cache-control: no-store
          content-length: 698
          content-type: application/json
          payment-required: eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJzZXR0bGVtZW50X3BlbmRpbmciLCJyZXNvdXJjZSI6eyJ1cmwiOiJodHRwczovL2FwaS5leGFtcGxlLmNvbS92MS90aGluZ3MvMSIsImRlc2NyaXB0aW9uIjoiYSB0aGluZyIsIm1pbWVUeXBlIjoiYXBwbGljYXRpb24vanNvbiJ9LCJhY2NlcHRzIjpbeyJzY2hlbWUiOiJleGFjdCIsIm5ldHdvcmsiOiJzdWk6bWFpbm5ldCIsImFtb3VudCI6IjIwMDAwIiwiYXNzZXQiOiIweGRiYTM0NjcyZTMwY2IwNjViMWY5M2UzYWI1NTMxODc2OGZkNmZlZjY2YzE1OTQyYzlmN2NiODQ2ZTJmOTAwZTc6OnVzZGM6OlVTREMiLCJwYXlUbyI6IjB4YTBjY2M4YmNjODNmNmM2MjgzNDAxMzRmODU0NmEyMWUwNjE4ZmQxYWFhMDI0MzJiYmE0NTRjNGEyYzIyMzNkYSIsIm1heFRpbWVvdXRTZWNvbmRzIjo2MCwiZXh0cmEiOnsiY2hhbGxlbmdlSWQiOiIxc1ZFbmt5VkdxTkNRZGN4MW1rTWJ0T0dSZFZOVXdPbGVqYWZkZ0MwOGVzIn19XX0=
          # decoded: {"x402Version":2,"error":"settlement_pending","resource":{"url":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json"},"accepts":[{"scheme":"exact","network":"sui:mainnet","amount":"20000","asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}]}
          retry-after: 2
          www-authenticate: Payment id="1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es", realm="api.example.com", method="sui", intent="charge", request="eyJhbW91bnQiOiIyMDAwMCIsImN1cnJlbmN5IjoiMHhkYmEzNDY3MmUzMGNiMDY1YjFmOTNlM2FiNTUzMTg3NjhmZDZmZWY2NmMxNTk0MmM5ZjdjYjg0NmUyZjkwMGU3Ojp1c2RjOjpVU0RDIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrIjoic3VpOm1haW5uZXQifSwicmVjaXBpZW50IjoiMHhhMGNjYzhiY2M4M2Y2YzYyODM0MDEzNGY4NTQ2YTIxZTA2MThmZDFhYWEwMjQzMmJiYTQ1NGM0YTJjMjIzM2RhIn0", description="a thing", expires="2030-01-01T00:01:00Z", opaque="eyJyZXNvdXJjZSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL3YxL3RoaW5ncy8xIn0"

          {"x402Version":1,"error":"The ledger did not confirm the payment yet.","accepts":[{"scheme":"exact","network":"sui:mainnet","maxAmountRequired":"20000","resource":"https://api.example.com/v1/things/1","description":"a thing","mimeType":"application/json","payTo":"0xa0ccc8bcc83f6c628340134f8546a21e0618fd1aaa02432bba454c4a2c2233da","maxTimeoutSeconds":60,"asset":"0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC","extra":{"challengeId":"1sVEnkyVGqNCQdcx1mkMbtOGRdVNUwOlejafdgC08es"}}],"type":"https://paymentauth.org/problems/payment-required","title":"Payment Required","status":402,"detail":"The ledger did not confirm the payment yet.","code":"settlement_pending"}"
        `)
      } finally {
        chain.faults.unavailable = false
      }
    })
  })
})
