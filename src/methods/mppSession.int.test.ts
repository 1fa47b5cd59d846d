import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toHex } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import {
  Challenge as MppxChallenge,
  Credential as MppxCredential,
  Receipt as MppxReceipt,
} from 'mppx'
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { type Challenge, decodeReceipt, parseChallenges, serializeCredential } from '../mpp.js'
import { type ChannelStore, createMemoryChannelStore } from '../session/channelStore.js'
import { buildOpen, buildTopUp, readChannel } from '../session/channelTx.js'
import { sseEvents, sseFields } from '../session/sse.js'
import { sessionSellerSecret, useSessionSeller } from '../session/testing/sessionSeller.js'
import { channelIdOf, signVoucher } from '../session/voucher.js'
import { MIN_GRACE_MS } from '../testing/ledger/channel.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { createSessionMethod } from './mppSession.js'

/**
 * The seller's channel books, with a gate a test can shut on `acceptVoucher`: while shut, a
 * voucher's step of the store is started but not done (a slow durable write). `steps` records the
 * order of the voucher steps (with the hold each took), the units spent, and the holds committed and
 * given back.
 */
function gatedBooks() {
  const inner = createMemoryChannelStore()
  const gate = { open: Promise.resolve(), release: () => {}, waiting: 0 }
  const steps: string[] = []
  // What the store says of its writes; a test sets it for a store that writes inline (SQLite).
  const kind = { writesInline: false }
  const store: ChannelStore = {
    ...inner,
    get writesInline() {
      return kind.writesInline
    },
    async acceptVoucher(...args) {
      gate.waiting++
      await gate.open
      gate.waiting--
      const accepted = await inner.acceptVoucher(...args)
      const hold = accepted.status === 'accepted' ? accepted.hold?.status : undefined
      steps.push(`voucher ${args[1]}: ${accepted.status}${hold === undefined ? '' : `, ${hold}`}`)
      return accepted
    },
    async spend(...args) {
      const spent = await inner.spend(...args)
      steps.push(`spend: ${spent.status}`)
      return spent
    },
    async commit(holdId) {
      const committed = await inner.commit(holdId)
      steps.push(`commit: ${committed}`)
      return committed
    },
    async settleHold(holdId, part) {
      const settled = await inner.settleHold(holdId, part)
      steps.push(`commit ${part.units} of the window: ${settled !== undefined}`)
      return settled
    },
    async release(holdId) {
      const released = await inner.release(holdId)
      steps.push(`release: ${released}`)
      return released
    },
  }
  const shut = () => {
    gate.open = new Promise((resolve) => {
      gate.release = resolve
    })
  }
  return { store, inner, gate, steps, shut, kind }
}

const books = gatedBooks()
const chain = useCheckedLedger()
const seller = useSessionSeller(chain, undefined, () => books.store)
const secret = sessionSellerSecret
let payee: Ed25519Keypair
let base: string
let channels: ChannelStore
beforeAll(() => {
  ;({ payee, base, channels } = seller)
})

/** The session challenge of a 402. */
async function sessionChallenge(path = '/call'): Promise<Challenge> {
  const response = await fetch(`${base}${path}`)
  expect(response.status).toBe(402)
  const found = parseChallenges(response.headers.get('www-authenticate') ?? '').find(
    (c) => c.intent === 'session',
  )
  if (found === undefined) throw new Error('no session challenge')
  return found
}

/** A buyer with a channel of `deposit` opened on the ledger, and what pays through it. */
async function openChannel(deposit: bigint) {
  const payer = chain.createTestWallet({ usdc: '5', sui: '1' })
  const sessionKey = ed25519.utils.randomSecretKey()
  const salt = crypto.getRandomValues(new Uint8Array(32))
  const tx = await buildOpen({
    client: chain.client,
    package: chain.modulesPackage,
    sender: payer.toSuiAddress(),
    registry: chain.channel.registry,
    coinType: chain.usdcType,
    deposit,
    payee: payee.toSuiAddress(),
    salt,
    signerPublicKey: ed25519.getPublicKey(sessionKey),
    graceMs: MIN_GRACE_MS,
  })
  const bytes = await tx.build()
  const { signature } = await payer.signTransaction(bytes)
  const executed = await chain.client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
  })
  if (executed.$kind !== 'Transaction') throw new Error('open failed')
  const channelId = channelIdOf({
    packageId: chain.modulesPackage,
    registry: chain.channel.registry,
    coinType: chain.usdcType,
    payer: payer.toSuiAddress(),
    payee: payee.toSuiAddress(),
    salt,
  })
  const descriptor = {
    payer: payer.toSuiAddress(),
    payee: payee.toSuiAddress(),
    operator: `0x${'0'.repeat(64)}`,
    coinType: chain.usdcType,
    salt: `0x${toHex(salt)}`,
    signerPublicKey: `0x${toHex(ed25519.getPublicKey(sessionKey))}`,
    gracePeriodMs: Number(MIN_GRACE_MS),
  }
  const voucher = async (amount: bigint) => {
    const signed = await signVoucher(
      { sign: (m) => ed25519.sign(m, sessionKey) },
      channelId,
      amount,
    )
    return { cumulativeAmount: amount.toString(), signature: `0x${toHex(signed.signature)}` }
  }
  const present = async (
    payload: Record<string, unknown>,
    init: RequestInit = {},
    path = '/call',
    serialize: typeof serializeCredential = serializeCredential,
  ): Promise<Response> => {
    const challenge = await sessionChallenge(path)
    return fetch(`${base}${path}`, {
      ...init,
      headers: {
        authorization: serialize({ challenge, payload: { channelId, descriptor, ...payload } }),
      },
    })
  }
  return { payer, channelId, digest: executed.Transaction.digest, voucher, present }
}

const codeOf = async (response: Response) => ((await response.json()) as { code?: string }).code

describe('MPP session (seller)', () => {
  it('offers a session challenge beside the charge: per call, the package and registry named', async () => {
    const challenge = await sessionChallenge()
    expect(challenge).toMatchObject({ method: 'sui', intent: 'session' })
    expect(challenge.request).toMatchObject({
      amount: '10000',
      unitType: 'request',
      currency: chain.usdcType,
      recipient: payee.toSuiAddress(),
      methodDetails: { package: chain.modulesPackage, registry: chain.channel.registry },
    })
  })

  it('serves calls paid by vouchers; refuses a repeated, a lower and an uncovered one; closes capturing what was spent', async () => {
    const buyer = await openChannel(100_000n)
    const servedBefore = seller.served

    // The open carries the first voucher, which pays the first call.
    const first = await buyer.present({
      action: 'open',
      type: 'digest',
      digest: buyer.digest,
      ...(await buyer.voucher(10_000n)),
    })
    expect(first.status).toBe(200)
    expect(decodeReceipt(first.headers.get('payment-receipt') ?? '')).toMatchObject({
      intent: 'session',
      channelId: buyer.channelId,
      acceptedCumulative: '10000',
      spent: '10000',
      units: '1',
    })

    const second = await buyer.present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
    expect(second.status).toBe(200)
    // A voucher used before pays nothing, the highest or a lower one.
    const repeated = await buyer.present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
    expect(repeated.status).toBe(402)
    expect(await codeOf(repeated)).toBe('replay')
    const lowerUsed = await buyer.present({ action: 'voucher', ...(await buyer.voucher(10_000n)) })
    expect(await codeOf(lowerUsed)).toBe('replay')
    // A new amount below the highest is taken (calls may arrive out of order), but it pays only
    // from the headroom, which two calls at 20 000 have used up.
    const lower = await buyer.present({ action: 'voucher', ...(await buyer.voucher(15_000n)) })
    expect(await codeOf(lower)).toBe('insufficient_balance')
    // A voucher signed by another key is refused.
    const forged = await buyer.present({
      action: 'voucher',
      cumulativeAmount: '30000',
      signature: `0x${'ab'.repeat(64)}`,
    })
    expect(await codeOf(forged)).toBe('voucher_invalid')
    // Above the deposit: top up first.
    const over = await buyer.present({ action: 'voucher', ...(await buyer.voucher(200_000n)) })
    expect(await codeOf(over)).toBe('amount_exceeds_deposit')
    expect(seller.served - servedBefore).toBe(2)

    // A failed call holds its price, then gives it back: nothing spent for it.
    const failed = await buyer.present(
      { action: 'voucher', ...(await buyer.voucher(30_000n)) },
      {},
      '/failing',
    )
    expect(failed.status).toBe(503)
    await expect.poll(async () => (await channels.get(buyer.channelId))?.held).toBe(0n)
    expect(await channels.get(buyer.channelId)).toMatchObject({ spent: 20_000n, highest: 30_000n })

    // The next call is covered by the headroom the failed call left: a raised voucher still pays.
    const third = await buyer.present({ action: 'voucher', ...(await buyer.voucher(40_000n)) })
    expect(third.status).toBe(200)
    expect(await channels.get(buyer.channelId)).toMatchObject({ spent: 30_000n, units: 3n })

    // Cooperative close on a bare request: 204, the seller captures what was spent, no more.
    const payeeBefore = await chain.usdcBalance(payee.toSuiAddress())
    const closed = await buyer.present(
      { action: 'close', ...(await buyer.voucher(40_000n)) },
      { method: 'POST' },
    )
    expect(closed.status).toBe(204)
    const receipt = decodeReceipt(closed.headers.get('payment-receipt') ?? '')
    expect(receipt).toMatchObject({ spent: '30000', channelId: buyer.channelId })
    expect(typeof receipt.txHash).toBe('string')
    const onChain = await readChannel(chain.client, buyer.channelId)
    expect(onChain).toMatchObject({ closed: true, settled: 30_000n })
    expect((await chain.usdcBalance(payee.toSuiAddress())) - payeeBefore).toBe(30_000n)
    // The payer (funded with 5 USDC) spent the 30 000 served, and got the rest of the deposit back.
    expect(await chain.usdcBalance(buyer.payer.toSuiAddress())).toBe(5_000_000n - 30_000n)

    // A closed channel is gone: 410.
    const after = await buyer.present({ action: 'voucher', ...(await buyer.voucher(50_000n)) })
    expect(after.status).toBe(410)
    expect(await codeOf(after)).toBe('channel_finalized')
  })

  it('asks for a higher voucher when the headroom does not cover a call, and takes a top-up on a bare request', async () => {
    const buyer = await openChannel(10_000n)
    const opened = await buyer.present(
      { action: 'open', type: 'digest', digest: buyer.digest, ...(await buyer.voucher(5_000n)) },
      { method: 'POST' },
    )
    // A bare open only records the voucher: 204, no call.
    expect(opened.status).toBe(204)
    const short = await buyer.present({ action: 'voucher', ...(await buyer.voucher(9_000n)) })
    expect(short.status).toBe(402)
    const problem = (await short.json()) as Record<string, unknown>
    expect(problem).toMatchObject({
      code: 'insufficient_balance',
      channelId: buyer.channelId,
      requiredCumulative: '10000',
      acceptedCumulative: '9000',
      deposit: '10000',
    })
    expect(problem.type).toBe('https://paymentauth.org/problems/session/insufficient-balance')

    const tx = await buildTopUp({
      client: chain.client,
      package: chain.modulesPackage,
      sender: buyer.payer.toSuiAddress(),
      channel: await readChannel(chain.client, buyer.channelId),
      amount: 50_000n,
    })
    const bytes = await tx.build()
    const { signature } = await buyer.payer.signTransaction(bytes)
    const executed = await chain.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
    })
    if (executed.$kind !== 'Transaction') throw new Error('top-up failed')
    const topUp = await buyer.present(
      {
        action: 'topUp',
        type: 'digest',
        digest: executed.Transaction.digest,
        additionalDeposit: '50000',
      },
      { method: 'POST' },
    )
    expect(topUp.status).toBe(204)
    expect(await channels.get(buyer.channelId)).toMatchObject({ deposit: 60_000n })
    const paid = await buyer.present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
    expect(paid.status).toBe(200)
  })

  it('refuses a channel whose descriptor is not the one on the ledger, and an unknown channel', async () => {
    const buyer = await openChannel(10_000n)
    const unknownSalt = await buyer.present({
      action: 'voucher',
      ...(await buyer.voucher(10_000n)),
      descriptor: {
        payer: buyer.payer.toSuiAddress(),
        payee: payee.toSuiAddress(),
        operator: `0x${'0'.repeat(64)}`,
        coinType: chain.usdcType,
        salt: `0x${'11'.repeat(32)}`,
        signerPublicKey: `0x${'22'.repeat(32)}`,
        gracePeriodMs: Number(MIN_GRACE_MS),
      },
    })
    expect(await codeOf(unknownSalt)).toBe('invalid_payload')
  })

  it("speaks mppx's wire: its codecs read and re-write our session challenge, credential and receipt", async () => {
    const response = await fetch(`${base}/call`)
    const theirs = MppxChallenge.fromResponseList(response).find((c) => c.intent === 'session')
    if (theirs === undefined) throw new Error('mppx found no session challenge')
    const ours = await sessionChallenge()
    expect(theirs.request).toEqual(ours.request)
    // The id binds intent "session" and the session request exactly as mppx computes it.
    expect(MppxChallenge.verify(theirs, { secretKey: secret })).toBe(true)
    expect(MppxChallenge.verify({ ...theirs, intent: 'charge' }, { secretKey: secret })).toBe(false)

    // A credential serialised by mppx pays a call; ours parses with mppx, payload intact.
    const buyer = await openChannel(50_000n)
    const paid = await buyer.present(
      { action: 'open', type: 'digest', digest: buyer.digest, ...(await buyer.voucher(10_000n)) },
      {},
      '/call',
      (credential) =>
        MppxCredential.serialize(
          MppxCredential.from({
            challenge: credential.challenge as Parameters<
              typeof MppxCredential.from
            >[0]['challenge'],
            payload: credential.payload,
          }),
        ),
    )
    expect(paid.status).toBe(200)
    const payload = {
      action: 'voucher',
      channelId: buyer.channelId,
      ...(await buyer.voucher(20_000n)),
    }
    const back = MppxCredential.deserialize(serializeCredential({ challenge: ours, payload }))
    expect(back.payload).toEqual(payload)
    expect(MppxChallenge.verify(back.challenge, { secretKey: secret })).toBe(true)

    // The receipt: mppx reads every field, and what it writes back reads the same with ours.
    const header = paid.headers.get('payment-receipt') ?? ''
    const read = MppxReceipt.deserialize(header)
    expect(read).toEqual(decodeReceipt(header))
    expect(read).toMatchObject({ method: 'sui', intent: 'session', channelId: buyer.channelId })
    expect(decodeReceipt(MppxReceipt.serialize(read))).toEqual(decodeReceipt(header))
  })

  it("runs a call's handler while its voucher and hold are written, and holds its answer until they are", async () => {
    const buyer = await openChannel(100_000n)
    const first = await buyer.present(await opening(buyer, 10_000n))
    expect(first.status).toBe(200)
    books.shut()
    onTestFinished(() => books.gate.release())
    books.steps.length = 0
    const servedBefore = seller.served

    let answered = false
    const pending = buyer
      .present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
      .then((response) => {
        answered = true
        return response
      })
    // The handler ran while the voucher's write waits at the gate; its answer waits too.
    await expect.poll(() => seller.served).toBe(servedBefore + 1)
    expect(books.gate.waiting).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(answered).toBe(false)
    expect(await books.inner.get(buyer.channelId)).toMatchObject({ highest: 10_000n, held: 0n })

    books.gate.release()
    const response = await pending
    expect(response.status).toBe(200)
    await expect.poll(() => books.steps).toEqual(['voucher 20000: accepted, held', 'commit: true'])
    expect(decodeReceipt(response.headers.get('payment-receipt') ?? '')).toMatchObject({
      acceptedCumulative: '20000',
      spent: '20000',
      units: '2',
    })
    await expect.poll(async () => (await channels.get(buyer.channelId))?.spent).toBe(20_000n)
    // A repeated voucher is still refused before its handler runs.
    const repeated = await buyer.present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
    expect(await codeOf(repeated)).toBe('replay')
    expect(seller.served).toBe(servedBefore + 1)
  })

  it('runs no handler for calls whose vouchers raise too little to cover them all, at once', async () => {
    const buyer = await openChannel(100_000n)
    // The first call leaves a headroom of one call (10 000) above what was spent.
    const first = await buyer.present(await opening(buyer, 20_000n))
    expect(first.status).toBe(200)
    await expect.poll(async () => (await channels.get(buyer.channelId))?.spent).toBe(10_000n)
    const servedBefore = seller.served

    // Eight calls at once, each with a new amount that raises the highest by a unit only: the
    // headroom covers one of them. The others are refused before their handlers run — while the
    // first one's write is still under way (the store's writes held at the gate until all eight
    // are in).
    const vouchers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => buyer.voucher(20_001n + BigInt(i))),
    )
    books.shut()
    onTestFinished(() => books.gate.release())
    const answering = Promise.all(
      vouchers.map((voucher) => buyer.present({ action: 'voucher', ...voucher })),
    )
    await expect.poll(() => books.gate.waiting).toBe(8)
    books.gate.release()
    const answers = await answering
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([200, 402, 402, 402, 402, 402, 402, 402])
    for (const answer of answers.filter((a) => a.status === 402)) {
      expect(await codeOf(answer)).toBe('insufficient_balance')
    }
    expect(seller.served - servedBefore).toBe(1)
    await expect.poll(async () => (await channels.get(buyer.channelId))?.spent).toBe(20_000n)
    expect(await channels.get(buyer.channelId)).toMatchObject({ held: 0n, units: 2n })
  })

  it("drops a call's answer when its write finds the headroom taken by another process: 402, nothing spent", async () => {
    const buyer = await openChannel(100_000n)
    const first = await buyer.present(await opening(buyer, 10_000n))
    expect(first.status).toBe(200)
    await expect.poll(async () => (await channels.get(buyer.channelId))?.spent).toBe(10_000n)
    books.shut()
    onTestFinished(() => books.gate.release())
    const servedBefore = seller.served

    // This process sees 20 000 covering the call; before its write lands, another process takes
    // a call's hold on a voucher for 25 000, and the headroom left (5 000) no longer covers it.
    const pending = buyer.present({ action: 'voucher', ...(await buyer.voucher(20_000n)) })
    await expect.poll(() => seller.served).toBe(servedBefore + 1)
    const other = await buyer.voucher(25_000n)
    const elsewhere = await books.inner.acceptVoucher(
      buyer.channelId,
      25_000n,
      other.signature.slice(2),
      { amount: 10_000n, holdId: crypto.randomUUID(), leaseUntil: Date.now() + 60_000 },
    )
    expect(elsewhere).toMatchObject({ status: 'accepted', hold: { status: 'held' } })
    books.gate.release()

    const refused = await pending
    expect(refused.status).toBe(402)
    expect(await refused.json()).toMatchObject({
      code: 'insufficient_balance',
      requiredCumulative: '30000',
      acceptedCumulative: '25000',
    })
    expect(refused.headers.get('payment-receipt')).toBeNull()
    // Nothing spent or held for the refused call: only the other process's hold.
    expect(await channels.get(buyer.channelId)).toMatchObject({
      highest: 25_000n,
      spent: 10_000n,
      held: 10_000n,
    })
  })

  it('starts a metered answer while its voucher is made durable; no token is spent or sent before', async () => {
    const buyer = await openChannel(100_000n)
    const opened = await metered(buyer, await opening(buyer, 1_000n), 2)
    expect((await tokensOf(opened)).tokens).toHaveLength(2)

    // The voucher's write is slow: the answer starts (its 200) while it is still being made.
    books.shut()
    onTestFinished(() => books.gate.release())
    books.steps.length = 0
    const answer = await Promise.race([
      metered(buyer, { action: 'voucher', ...(await buyer.voucher(5_000n)) }, 3),
      new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 3_000)),
    ])
    if (answer === 'late') throw new Error('the answer waited for its voucher to be durable')
    expect(answer.status).toBe(200)
    expect(books.gate.waiting).toBe(1)
    // Its tokens wait for the voucher: none spent, none sent.
    const reading = tokensOf(answer)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(books.steps).toEqual([])
    expect(await channels.get(buyer.channelId)).toMatchObject({ highest: 1_000n, spent: 200n })

    books.gate.release()
    const { tokens, receipt } = await reading
    expect(tokens).toHaveLength(3)
    // The tokens are paid from the window of units its voucher held (16): what they used of it is
    // committed at the end, in one step, and the rest given back.
    expect(books.steps).toEqual(['voucher 5000: accepted, held', 'commit 3 of the window: true'])
    expect(await channels.get(buyer.channelId)).toMatchObject({ spent: 500n, held: 0n })
    expect(receipt).toMatchObject({ acceptedCumulative: '5000', spent: '500', units: '5' })
  })

  it('with a unitWindow of 1, spends each unit after the first durably before it leaves', async () => {
    const buyer = await openChannel(100_000n)
    const opened = await metered(buyer, await opening(buyer, 1_000n), 1, '/tokens-alone')
    expect((await tokensOf(opened)).tokens).toHaveLength(1)
    books.steps.length = 0
    const answer = await metered(
      buyer,
      { action: 'voucher', ...(await buyer.voucher(5_000n)) },
      3,
      '/tokens-alone',
    )
    const { tokens, receipt } = await tokensOf(answer)
    expect(tokens).toHaveLength(3)
    // The voucher's write held one unit, the first token's; the others were spent one by one.
    expect(books.steps).toEqual([
      'voucher 5000: accepted, held',
      'commit 1 of the window: true',
      'spend: spent',
      'spend: spent',
    ])
    expect(receipt).toMatchObject({ acceptedCumulative: '5000', spent: '400', units: '4' })
    const options = {
      client: chain.client,
      signer: seller.payee,
      package: chain.modulesPackage,
      registry: chain.channel.registry,
      store: createMemoryChannelStore(),
      unitType: 'token',
    } as const
    expect(() => createSessionMethod({ ...options, unitWindow: 0 })).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
    // The window a method meters with is on the method: what a seller's configuration made it.
    expect(createSessionMethod({ ...options, unitWindow: 3 }).unitWindow).toBe(3)
    expect(createSessionMethod(options).unitWindow).toBe(16)
  })

  it("on a store that writes inline, writes a metered call's voucher while its upstream works, and sends no token before", async () => {
    const buyer = await openChannel(100_000n)
    const opened = await metered(buyer, await opening(buyer, 1_000n), 1)
    expect((await tokensOf(opened)).tokens).toHaveLength(1)
    books.kind.writesInline = true
    onTestFinished(() => {
      books.kind.writesInline = false
      books.gate.release()
    })
    books.shut()
    books.steps.length = 0

    // The handler waits 300 ms for its upstream: the voucher's write is under way meanwhile (it
    // starts on the turn after the decision, not once the answer starts).
    const pending = buyer.present(
      { action: 'voucher', ...(await buyer.voucher(3_000n)) },
      { method: 'POST' },
      '/tokens?n=2&wait=300',
    )
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(books.gate.waiting).toBe(1)
    // The answer started: no token leaves before its voucher is written.
    const answer = await pending
    expect(answer.status).toBe(200)
    expect(books.gate.waiting).toBe(1)
    const reading = tokensOf(answer)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(books.steps).toEqual([])
    books.gate.release()
    expect((await reading).tokens).toHaveLength(2)
    expect(books.steps).toEqual(['voucher 3000: accepted, held', 'commit 2 of the window: true'])

    // A call that meters no answer still has its voucher recorded, when it completes, and its
    // unit hold given back.
    books.steps.length = 0
    const plain = await buyer.present(
      { action: 'voucher', ...(await buyer.voucher(4_000n)) },
      { method: 'POST' },
      '/tokens?plain',
    )
    expect(plain.status).toBe(200)
    await plain.text()
    await expect.poll(() => books.steps).toEqual(['voucher 4000: accepted, held', 'release: true'])
    expect(await channels.get(buyer.channelId)).toMatchObject({ highest: 4_000n, held: 0n })
  })

  it('spends nothing on a voucher the books refuse after the answer started, and answers the next call 410', async () => {
    const buyer = await openChannel(100_000n)
    const opened = await metered(buyer, await opening(buyer, 1_000n), 1)
    expect((await tokensOf(opened)).tokens).toHaveLength(1)
    const again = await metered(buyer, { action: 'voucher', ...(await buyer.voucher(2_000n)) }, 1)
    expect((await tokensOf(again)).tokens).toHaveLength(1)
    // Another process saw the buyer ask the ledger to close: this one still knows it open.
    await channels.observe(buyer.channelId, { state: 'closing' })

    const late = await metered(buyer, { action: 'voucher', ...(await buyer.voucher(5_000n)) }, 3)
    expect(late.status).toBe(200)
    const { tokens, receipt } = await tokensOf(late)
    expect(tokens).toEqual([])
    expect(receipt).toMatchObject({ acceptedCumulative: '2000', spent: '200', units: '2' })
    expect(await channels.get(buyer.channelId)).toMatchObject({ highest: 2_000n, spent: 200n })

    // The refusal taught this process: the next call is refused before its handler runs.
    const next = await metered(buyer, { action: 'voucher', ...(await buyer.voucher(6_000n)) }, 3)
    expect(next.status).toBe(410)
    expect(await codeOf(next)).toBe('channel_finalized')
  })
})

/** The payload of a channel's open on the ledger, carrying a first voucher for `amount`. */
async function opening(buyer: Awaited<ReturnType<typeof openChannel>>, amount: bigint) {
  return { action: 'open', type: 'digest', digest: buyer.digest, ...(await buyer.voucher(amount)) }
}

/** A call to `route` (default `/tokens`) for `n` tokens metered per token, paid with `payload`. */
function metered(
  buyer: Awaited<ReturnType<typeof openChannel>>,
  payload: Record<string, unknown>,
  n: number,
  route = '/tokens',
): Promise<Response> {
  return buyer.present(payload, { method: 'POST' }, `${route}?n=${n}`)
}

/** A metered answer's token events and its closing receipt. */
async function tokensOf(response: Response) {
  const tokens: string[] = []
  let receipt: Record<string, string> | undefined
  if (response.body === null) throw new Error('no body')
  for await (const event of sseEvents(response.body)) {
    const { name, data } = sseFields(event)
    if (name === 'payment-receipt') receipt = JSON.parse(data ?? '{}')
    else if (name === 'message' && data !== '[DONE]') tokens.push(data ?? '')
  }
  return { tokens, receipt }
}
