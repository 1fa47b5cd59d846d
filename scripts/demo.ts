// `npm run demo`: the main job on embedded defaults. Starts the reference gateway in this process
// (SQLite in a temporary folder, the local ledger emulator, the local stub upstreams; no
// configuration, no network), makes a fresh funded test wallet, and pays one call in EACH dialect
// with the paying fetch of `tollgate/client`, printing the 402, the payment, the settlement digest
// and the answer; then a chat with the embedded confidential model (served by the simulated enclave)
// whose receipt is verified step by step, as `tollgate verify` does, bound to the demo's key and the
// bytes it received. The simulated enclave's quote chains to a TEST root CA: the demo accepts it on
// purpose (`allowTestRoot`) and says so. Last, pay as you go: one streamed confidential answer paid
// per token over a session — the channel's opening, the vouchers, the settlement and the close.
// Payments on the local emulator are NOT real money.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import pc from 'picocolors'
import { Attestation, Mpp, Session } from 'tollgate'
import * as Client from 'tollgate/client'
import { loadConfig } from '../reference-gateway/config.js'
import { defaultConfidentialModelId } from '../reference-gateway/inference/models.js'
import { startGateway } from '../reference-gateway/server/server.js'
import { notRealBanner } from '../src/cli/ledger.js'
import { createPayingFetch, paymentOf } from '../src/client/index.js'
import { formatAmount } from '../src/money.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-demo-'))
const gateway = await startGateway({
  // An empty environment on purpose: the demo never picks up DATABASE_URL, keys or a real ledger.
  config: loadConfig({ env: {}, overrides: { port: 0, dataDir: folder, logLevel: 'silent' } }),
})
const emulator = gateway.emulator
if (emulator === undefined) throw new Error('the demo runs on the embedded ledger emulator')

const show = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max)}…` : text)
const rule = (title: string) => console.log(`\n${pc.bold(pc.cyan(`── ${title} `.padEnd(78, '─')))}`)

console.log(notRealBanner())
console.log(
  `gateway  ${gateway.url}   (catalog: ${gateway.url}/, console: /console, docs: /openapi.json, /llms.txt)`,
)
console.log(`ledger   ${gateway.ledger.url} (local emulator)   pay to ${gateway.payTo}`)

const buyer = emulator.createTestWallet({ usdc: '5', sui: '1' })
const balance = async () =>
  formatAmount(
    BigInt(
      (
        await (
          await import('../src/ledger/index.js')
        )
          .createLedger({ url: emulator.url })
          .getBalance(buyer.toSuiAddress(), emulator.usdcType)
      ).total,
    ),
  )
console.log(`buyer    ${buyer.toSuiAddress()} (fresh test wallet, ${await balance()} USDC)`)

// 1. No payment: the 402, in both dialects at once.
const chatUrl = `${gateway.url}/openai/v1/chat/completions`
const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'Say hello' }] })
rule('1. a call without payment')
console.log(`> POST ${chatUrl}`)
const unpaid = await fetch(chatUrl, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: chatBody,
})
console.log(`< HTTP ${unpaid.status} ${unpaid.statusText}`)
console.log(`< www-authenticate: ${show(unpaid.headers.get('www-authenticate') ?? '')}`)
console.log(`< payment-required: ${show(unpaid.headers.get('payment-required') ?? '')}`)
const envelope = (await unpaid.json()) as { accepts?: { maxAmountRequired: string }[] }
console.log(show(JSON.stringify(envelope, null, 2), 900))

// 2. Pay in each dialect with the paying fetch; print what goes on the wire.
const limitsFile = join(folder, 'spending.json')
async function payOnce(dialect: 'x402' | 'mpp', url: string, body: string) {
  const pay = createPayingFetch({
    signer: buyer,
    ledger: emulator?.url,
    prefer: dialect,
    maxPrice: '0.10',
    limits: { file: limitsFile },
    fetch: (request) => {
      const x402 = request.headers.get('x-payment')
      const x402v2 = request.headers.get('payment-signature')
      const mpp = request.headers.get('authorization')
      if (x402 !== null) console.log(`> X-PAYMENT: ${show(x402, 120)}`)
      if (x402v2 !== null) console.log(`> PAYMENT-SIGNATURE: ${show(x402v2, 120)}`)
      if (mpp !== null) console.log(`> Authorization: ${show(mpp, 120)}`)
      return fetch(request)
    },
    onChallenge: ({ selected }) =>
      console.log(
        `  402 → paying ${formatAmount(selected.amount)} USDC to ${show(selected.payTo, 20)} in the ${dialect} dialect`,
      ),
  })
  console.log(`> POST ${url}`)
  const response = await pay(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  })
  const payment = paymentOf(response)
  console.log(`< HTTP ${response.status}`)
  for (const name of ['PAYMENT-RESPONSE', 'X-PAYMENT-RESPONSE', 'Payment-Receipt']) {
    const receipt = response.headers.get(name)
    if (receipt !== null) console.log(`< ${name}: ${show(receipt, 100)}`)
  }
  console.log(`  settlement digest: ${pc.bold(payment?.digest ?? '(none)')}`)
  console.log(`  answer: ${show(JSON.stringify(await response.json()), 400)}`)
  if (response.status !== 200 || payment === undefined) throw new Error(`${dialect} call failed`)
}

rule(
  '2. pay in the x402 dialect (version 2: the signed transaction in PAYMENT-SIGNATURE; the gateway settles)',
)
await payOnce('x402', chatUrl, chatBody)

rule('3. pay in the MPP dialect (buyer submits, then sends Authorization: Payment)')
await payOnce(
  'mpp',
  `${gateway.url}/brave/v1/web/search`,
  JSON.stringify({ q: 'per-request payments over HTTP 402' }),
)

rule('4. a confidential model: attested enclave, receipt verified step by step')
const { key, id: keyId } = await gateway.inference.keys.create({ name: 'demo', credit: 1_000_000n })
console.log(`> POST ${gateway.url}/v1/chat/completions  (model ${defaultConfidentialModelId})`)
const confidential = await fetch(`${gateway.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    model: defaultConfidentialModelId,
    messages: [{ role: 'user', content: 'Say hello from inside the enclave.' }],
  }),
})
const receiptId = confidential.headers.get('x-receipt-id')
const received = new Uint8Array(await confidential.arrayBuffer())
console.log(`< HTTP ${confidential.status}   x-receipt-id: ${receiptId}`)
console.log(`  answer: ${show(new TextDecoder().decode(received), 300)}`)
if (confidential.status !== 200 || receiptId === null) throw new Error('confidential call failed')
// The anchor worker runs on a timer; asking for the anchor now submits it at once.
const anchor = await fetch(`${gateway.url}/v1/aci/anchor/${receiptId}`, { method: 'POST' })
console.log(
  `> POST /v1/aci/anchor/${receiptId}\n< HTTP ${anchor.status} ${show(await anchor.text(), 140)}`,
)
console.log(
  pc.yellow(
    '  TEST ROOT: the simulated enclave’s quote chains to a test root CA, accepted here on purpose\n' +
      '  (allowTestRoot, tollgate verify --allow-test-root); it proves nothing about the hardware.',
  ),
)
const verified = await Attestation.verifyInferenceReceipt(receiptId, {
  inferenceUrl: gateway.url,
  // Bound to this buyer: its key and the exact bytes it received.
  expectPayment: { keyId },
  responseBytes: received,
  allowTestRoot: true,
})
for (const step of verified.steps) {
  const mark = { passed: pc.green('✓'), failed: pc.red('✗'), skipped: pc.dim('·') }[step.status]
  console.log(`  ${mark} ${step.step}: ${show(step.detail, 240)}`)
}
console.log(
  `  receipt ${pc.bold(verified.status)} (trust policy from the ${verified.policySource}${verified.testRoot ? ', TEST ROOT accepted' : ''})`,
)
if (verified.status !== 'verified') throw new Error('the confidential receipt did not verify')

rule('5. pay as you go: a streamed confidential answer paid per token over a session')
// One channel, opened once on the ledger; then each token is paid by an off-chain voucher signed
// by the channel's session key. The buyer raises its voucher ahead of the stream (body-less POSTs,
// answered 204); the gateway commits each token's price before it sends it.
const sessions = gateway.sessions
if (sessions === undefined) throw new Error('the embedded gateway offers sessions')
let action = 'voucher'
const sessionBuyer = Client.createSessionFetch({
  signer: buyer,
  client: new SuiGrpcClient({ network: 'mainnet', baseUrl: emulator.url }),
  pinned: [{ network: 'mainnet', package: sessions.package, registry: sessions.registry }],
  maxDeposit: 100_000n,
  deposit: () => 50_000n,
  streamAhead: 16n,
  book: Client.createChannelBook(join(folder, 'sessions.json')),
  fetch: async (input, init) => {
    const response = await fetch(input, init)
    const receipt = response.headers.get('payment-receipt')
    if (response.status === 204 && receipt !== null) {
      const { acceptedCumulative } = Mpp.decodeReceipt(receipt)
      console.log(`  > ${action} ${formatAmount(BigInt(String(acceptedCumulative)))} USDC  < 204`)
    }
    return response
  },
})
const openUrl = `${gateway.url}/open/v1/chat/completions`
console.log(
  `> POST ${openUrl}  (model ${defaultConfidentialModelId}, stream, ${formatAmount(sessions.tokenPrice)} USDC a token)`,
)
const streamed = await sessionBuyer.fetch(openUrl, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    model: defaultConfidentialModelId,
    messages: [{ role: 'user', content: 'Tell me about payment channels, token by token.' }],
    max_tokens: 64,
    stream: true,
  }),
})
const [channel] = await sessionBuyer.list()
if (streamed.status !== 200 || streamed.body === null || channel === undefined) {
  throw new Error(`the session call failed (${streamed.status})`)
}
console.log(
  `  channel ${channel.channelId} opened: deposit ${formatAmount(BigInt(channel.deposit))} USDC, digest ${channel.openDigest}`,
)
let tokens = 0
let text = ''
for await (const event of Session.sseEvents(streamed.body)) {
  const { name, data } = Session.sseFields(event)
  if (name === 'payment-receipt') console.log(`< event payment-receipt: ${data}`)
  else if (name !== 'message') console.log(`< event ${name}: ${data}`)
  else if (data !== undefined && data !== '[DONE]') {
    const delta = (JSON.parse(data) as { choices?: { delta?: { content?: string } }[] })
      .choices?.[0]?.delta?.content
    if (typeof delta === 'string' && delta !== '') {
      tokens++
      text += delta
    }
  }
}
console.log(`  ${tokens} tokens: ${show(text, 200)}`)
const settled = await sessions.settler.settle(channel.channelId)
console.log(
  `  settled on the ledger: ${formatAmount(settled?.settled ?? 0n)} USDC to the gateway, digest ${settled?.digest ?? '(nothing to settle)'}`,
)
action = 'close, voucher'
const closed = await sessionBuyer.close(channel.channelId)
console.log(
  `  closed: spent ${formatAmount(closed.spent)} USDC, ${formatAmount(closed.refunded)} USDC back to the buyer, digest ${closed.digest}`,
)
if (closed.spent !== BigInt(tokens) * sessions.tokenPrice)
  throw new Error('spent is not the tokens')

rule('done')
console.log(`buyer balance now ${await balance()} USDC (test money)`)
await gateway.stop()
rmSync(folder, { recursive: true, force: true })
process.exit(0)
