/**
 * The session channel on the local ledger, through the real `SuiGrpcClient` and the library's
 * builders: every function's checks, the money each move pays out, and conservation (the test
 * ledger checks after every transaction that no money was created or destroyed).
 */
import type { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { beforeAll, describe, expect, it } from 'vitest'
import { moveTransaction } from '../internal/moveTx.js'
import { ChannelAbort, MIN_GRACE_MS } from '../testing/ledger/channel.js'
import type { StartedLedger } from '../testing/ledger/index.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import {
  buildClose,
  buildOpen,
  buildRequestClose,
  buildSettle,
  buildTopUp,
  buildWithdraw,
  type ChannelRef,
  type ChannelState,
  readChannel,
} from './channelTx.js'
import { channelIdOf, signVoucher, type Voucher } from './voucher.js'

let ledger: StartedLedger
let client: SuiGrpcClient
const checked = useCheckedLedger()
beforeAll(() => {
  ledger = checked.ledger
  client = checked.client
})

type Outcome =
  | { status: 'ok'; events: { type: string; json: Record<string, unknown> }[] }
  | { status: 'aborted'; code: number | undefined; module: string | undefined }

async function exec(signer: Ed25519Keypair, txOrPromise: Promise<Transaction>): Promise<Outcome> {
  const bytes = await (await txOrPromise).build()
  const { signature } = await signer.signTransaction(bytes)
  const result = await client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
    include: { effects: true, events: true },
  })
  if (result.$kind === 'Transaction') {
    return {
      status: 'ok',
      events: (result.Transaction.events ?? []).map((e) => ({
        type: e.eventType.split('::').pop() ?? '',
        json: (e.json ?? {}) as Record<string, unknown>,
      })),
    }
  }
  const error = result.FailedTransaction.status.error
  return error?.$kind === 'MoveAbort'
    ? {
        status: 'aborted',
        code: Number(error.MoveAbort.abortCode),
        module: error.MoveAbort.location?.module,
      }
    : { status: 'aborted', code: undefined, module: undefined }
}

const aborted = (code: bigint) => ({ status: 'aborted', code: Number(code), module: 'channel' })
const usdc = async (address: string) => checked.usdcBalance(address)

/** A payer with USDC and SUI coins, a payee with SUI for gas, a session key. */
type Parties = {
  payer: Ed25519Keypair
  payee: Ed25519Keypair
  sessionKey: Uint8Array
  sign(channelId: string, amount: bigint): Promise<Voucher>
}

function parties(): Parties {
  const sessionKey = ed25519.utils.randomSecretKey()
  return {
    payer: ledger.createTestWallet({ usdc: '10', sui: '1' }),
    payee: ledger.createTestWallet({ usdc: '0', sui: '1' }),
    sessionKey,
    sign: (channelId, amount) =>
      signVoucher({ sign: (m) => ed25519.sign(m, sessionKey) }, channelId, amount),
  }
}

type OpenOptions = Partial<Parameters<typeof buildOpen>[0]>

function openTx(p: Parties, extra: OpenOptions = {}) {
  return buildOpen({
    client,
    package: ledger.modulesPackage,
    sender: p.payer.toSuiAddress(),
    registry: ledger.channel.registry,
    coinType: ledger.usdcType,
    deposit: 1_000_000n,
    payee: p.payee.toSuiAddress(),
    salt: new Uint8Array(32).fill(9),
    signerPublicKey: ed25519.getPublicKey(p.sessionKey),
    graceMs: MIN_GRACE_MS,
    ...extra,
  })
}

/** Opens a channel of 1 USDC (or `extra.deposit`) and returns it as read from the ledger. */
async function open(p: Parties, extra: OpenOptions = {}): Promise<ChannelState> {
  const salt = extra.salt ?? crypto.getRandomValues(new Uint8Array(32))
  const outcome = await exec(p.payer, openTx(p, { ...extra, salt }))
  expect(outcome.status).toBe('ok')
  const id = channelIdOf({
    packageId: ledger.modulesPackage,
    registry: ledger.channel.registry,
    coinType: ledger.usdcType,
    payer: p.payer.toSuiAddress(),
    payee: p.payee.toSuiAddress(),
    salt,
  })
  return readChannel(client, id)
}

const common = (signer: Ed25519Keypair) => ({
  client,
  package: ledger.modulesPackage,
  sender: signer.toSuiAddress(),
})

describe('channel::open', () => {
  let p: Parties
  beforeAll(() => {
    p = parties()
  })

  it('creates the shared channel at the derived id, holding the deposit', async () => {
    const before = await usdc(p.payer.toSuiAddress())
    const salt = new Uint8Array(32).fill(1)
    const outcome = await exec(p.payer, openTx(p, { salt, deposit: 2_500_000n }))
    const id = channelIdOf({
      packageId: ledger.modulesPackage,
      registry: ledger.channel.registry,
      coinType: ledger.usdcType,
      payer: p.payer.toSuiAddress(),
      payee: p.payee.toSuiAddress(),
      salt,
    })
    expect(outcome).toMatchObject({
      status: 'ok',
      events: [
        {
          type: 'ChannelOpened',
          json: {
            channel_id: id,
            payer: p.payer.toSuiAddress(),
            payee: p.payee.toSuiAddress(),
            deposit: '2500000',
            grace_ms: String(MIN_GRACE_MS),
          },
        },
      ],
    })
    expect(await readChannel(client, id)).toMatchObject({
      id,
      payer: p.payer.toSuiAddress(),
      payee: p.payee.toSuiAddress(),
      operator: normalizeSuiAddress('0x0'),
      escrow: 2_500_000n,
      deposited: 2_500_000n,
      settled: 0n,
      closeRequestedMs: 0n,
      closed: false,
    })
    expect(await usdc(p.payer.toSuiAddress())).toBe(before - 2_500_000n)
  })

  it('refuses a second channel with the same key, even after the first is closed', async () => {
    const salt = new Uint8Array(32).fill(2)
    const channel = await open(p, { salt })
    expect(await exec(p.payer, openTx(p, { salt }))).toEqual(aborted(ChannelAbort.alreadyOpened))
    expect(
      (await exec(p.payee, buildClose({ ...common(p.payee), channel, capture: 0n }))).status,
    ).toBe('ok')
    expect(await exec(p.payer, openTx(p, { salt }))).toEqual(aborted(ChannelAbort.alreadyOpened))
    // Another salt is another channel.
    expect((await exec(p.payer, openTx(p, { salt: new Uint8Array(32).fill(3) }))).status).toBe('ok')
  })

  it('checks the payee, the salt, the signer key, the grace period and the deposit', async () => {
    const salt = new Uint8Array(32).fill(4)
    expect(await exec(p.payer, openTx(p, { salt, payee: '0x0' }))).toEqual(
      aborted(ChannelAbort.badPayee),
    )
    expect(await exec(p.payer, openTx(p, { salt: new Uint8Array(31) }))).toEqual(
      aborted(ChannelAbort.badSalt),
    )
    expect(await exec(p.payer, openTx(p, { salt, signerPublicKey: new Uint8Array(33) }))).toEqual(
      aborted(ChannelAbort.badSigner),
    )
    expect(await exec(p.payer, openTx(p, { salt, graceMs: MIN_GRACE_MS - 1n }))).toEqual(
      aborted(ChannelAbort.graceTooShort),
    )
    // An empty deposit (the builder refuses one, so the call is made by hand).
    const tx = moveTransaction({ ...common(p.payer), gasBudget: 10_000_000n }).then((t) => {
      const [funds] = t.moveCall({ target: '0x2::balance::zero', typeArguments: [ledger.usdcType] })
      t.moveCall({
        target: `${ledger.modulesPackage}::channel::open`,
        typeArguments: [ledger.usdcType],
        arguments: [
          t.sharedObjectRef({
            objectId: ledger.channel.registry,
            initialSharedVersion: '1',
            mutable: true,
          }),
          t.pure.address(p.payee.toSuiAddress()),
          t.pure.address('0x0'),
          t.pure.vector('u8', salt),
          t.pure.vector('u8', ed25519.getPublicKey(p.sessionKey)),
          t.pure.u64(MIN_GRACE_MS),
          funds as NonNullable<typeof funds>,
        ],
      })
      return t
    })
    expect(await exec(p.payer, tx)).toEqual(aborted(ChannelAbort.zeroAmount))
    // None of them took the salt: a valid open with it still works.
    expect((await exec(p.payer, openTx(p, { salt }))).status).toBe('ok')
  })

  it('takes the deposit from the address balance when the payer has no coins', async () => {
    const payer = ledger.createTestWallet({ usdc: '0', sui: '1' })
    ledger.faucet({ address: payer.toSuiAddress(), usdc: '3', into: 'addressBalance' })
    const q = { ...p, payer }
    const channel = await open(q, { deposit: 2_000_000n })
    expect(channel.escrow).toBe(2_000_000n)
    expect(await usdc(payer.toSuiAddress())).toBe(1_000_000n)
  })
})

describe('channel::settle and channel::close', () => {
  let p: Parties
  let channel: ChannelRef
  beforeAll(async () => {
    p = parties()
    channel = await open(p)
  })
  const settle = (capture: bigint, voucher: Voucher, signer = p.payee) =>
    exec(signer, buildSettle({ ...common(signer), channel, voucher, capture }))

  it('pays the payee the capture, at most the voucher, and keeps the channel open', async () => {
    const payee = p.payee.toSuiAddress()
    const voucher = await p.sign(channel.id, 300_000n)
    // The voucher authorises 0.3 USDC; 0.2 was spent.
    expect(await settle(200_000n, voucher)).toMatchObject({
      status: 'ok',
      events: [
        {
          type: 'Settled',
          json: { cumulative_amount: '300000', amount: '200000', settled: '200000' },
        },
      ],
    })
    expect(await usdc(payee)).toBe(200_000n)
    expect(await settle(300_000n, voucher)).toMatchObject({ status: 'ok' })
    expect(await usdc(payee)).toBe(300_000n)
    expect(await readChannel(client, channel.id)).toMatchObject({
      escrow: 700_000n,
      settled: 300_000n,
      closed: false,
    })
  })

  it('refuses a capture above the voucher, above the deposit, or not above what is settled', async () => {
    expect(await settle(400_001n, await p.sign(channel.id, 400_000n))).toEqual(
      aborted(ChannelAbort.badAmount),
    )
    expect(await settle(1_000_001n, await p.sign(channel.id, 2_000_000n))).toEqual(
      aborted(ChannelAbort.badAmount),
    )
    expect(await settle(300_000n, await p.sign(channel.id, 500_000n))).toEqual(
      aborted(ChannelAbort.badAmount),
    )
  })

  it('refuses a voucher for another channel, by another key, or with a bad signature', async () => {
    const other = await open(p)
    expect(await settle(400_000n, await p.sign(other.id, 400_000n))).toEqual(
      aborted(ChannelAbort.badSignature),
    )
    const stranger = ed25519.utils.randomSecretKey()
    const forged = await signVoucher(
      { sign: (m) => ed25519.sign(m, stranger) },
      channel.id,
      400_000n,
    )
    expect(await settle(400_000n, forged)).toEqual(aborted(ChannelAbort.badSignature))
    const good = await p.sign(channel.id, 400_000n)
    expect(await settle(400_000n, { ...good, signature: good.signature.slice(0, 63) })).toEqual(
      aborted(ChannelAbort.badSignature),
    )
    // A voucher for an amount it was not signed for.
    expect(await settle(400_000n, { ...good, cumulativeAmount: 450_000n })).toEqual(
      aborted(ChannelAbort.badSignature),
    )
  })

  it('lets only the payee (or its operator) settle and close', async () => {
    const voucher = await p.sign(channel.id, 400_000n)
    expect(await settle(400_000n, voucher, p.payer)).toEqual(aborted(ChannelAbort.notPayee))
    expect(
      await exec(p.payer, buildClose({ ...common(p.payer), channel, voucher, capture: 400_000n })),
    ).toEqual(aborted(ChannelAbort.notPayee))

    const operator = ledger.createTestWallet({ usdc: '0', sui: '1' })
    const withOperator = await open(p, { operator: operator.toSuiAddress() })
    const v = await p.sign(withOperator.id, 100_000n)
    const byOperator = await exec(
      operator,
      buildSettle({ ...common(operator), channel: withOperator, voucher: v, capture: 100_000n }),
    )
    expect(byOperator.status).toBe('ok')
    // The operator acts for the payee: the money goes to the payee.
    expect(await usdc(operator.toSuiAddress())).toBe(0n)
    expect(await readChannel(client, withOperator.id)).toMatchObject({ settled: 100_000n })
  })

  it('closes: the capture to the payee, the rest to the payer, then refuses every move', async () => {
    const payer = p.payer.toSuiAddress()
    const payee = p.payee.toSuiAddress()
    const [payerBefore, payeeBefore] = [await usdc(payer), await usdc(payee)]
    const voucher = await p.sign(channel.id, 600_000n)
    // Above the voucher is refused, as in settle.
    expect(
      await exec(p.payee, buildClose({ ...common(p.payee), channel, voucher, capture: 600_001n })),
    ).toEqual(aborted(ChannelAbort.badAmount))
    const closed = await exec(
      p.payee,
      buildClose({ ...common(p.payee), channel, voucher, capture: 550_000n }),
    )
    expect(closed).toMatchObject({
      status: 'ok',
      events: [
        { type: 'ChannelClosed', json: { settled: '550000', paid: '250000', refunded: '450000' } },
      ],
    })
    expect(await usdc(payee)).toBe(payeeBefore + 250_000n)
    expect(await usdc(payer)).toBe(payerBefore + 450_000n)
    expect(await readChannel(client, channel.id)).toMatchObject({
      escrow: 0n,
      settled: 550_000n,
      closed: true,
    })
    const late = await p.sign(channel.id, 900_000n)
    expect(await settle(600_000n, late)).toEqual(aborted(ChannelAbort.closed))
    expect(await exec(p.payer, buildTopUp({ ...common(p.payer), channel, amount: 1n }))).toEqual(
      aborted(ChannelAbort.closed),
    )
    expect(await exec(p.payer, buildRequestClose({ ...common(p.payer), channel }))).toEqual(
      aborted(ChannelAbort.closed),
    )
  })

  it('refuses a channel passed by immutable reference', async () => {
    const fresh = await open(p)
    const tx = moveTransaction({ ...common(p.payee), gasBudget: 10_000_000n }).then((t) => {
      t.moveCall({
        target: `${ledger.modulesPackage}::channel::close`,
        typeArguments: [ledger.usdcType],
        arguments: [
          t.sharedObjectRef({
            objectId: fresh.id,
            initialSharedVersion: fresh.initialSharedVersion,
            mutable: false,
          }),
          t.pure.u64(0n),
          t.pure.u64(0n),
          t.pure.vector('u8', []),
        ],
      })
      return t
    })
    expect(await exec(p.payee, tx)).toEqual(aborted(ChannelAbort.readOnly))
  })

  it('closes with nothing more to pay without a voucher, and refuses a capture below settled', async () => {
    const fresh = await open(p)
    const v = await p.sign(fresh.id, 100_000n)
    expect(
      (
        await exec(
          p.payee,
          buildSettle({ ...common(p.payee), channel: fresh, voucher: v, capture: 100_000n }),
        )
      ).status,
    ).toBe('ok')
    expect(
      await exec(p.payee, buildClose({ ...common(p.payee), channel: fresh, capture: 99_999n })),
    ).toEqual(aborted(ChannelAbort.badAmount))
    // Above what is settled, an unsigned close is refused.
    expect(
      await exec(p.payee, buildClose({ ...common(p.payee), channel: fresh, capture: 100_001n })),
    ).toEqual(aborted(ChannelAbort.badSignature))
    const before = await usdc(p.payer.toSuiAddress())
    expect(
      (await exec(p.payee, buildClose({ ...common(p.payee), channel: fresh, capture: 100_000n })))
        .status,
    ).toBe('ok')
    expect(await usdc(p.payer.toSuiAddress())).toBe(before + 900_000n)
  })
})

describe('channel::request_close, channel::withdraw and channel::top_up', () => {
  let p: Parties
  beforeAll(() => {
    p = parties()
  })
  const requestClose = (channel: ChannelRef, signer = p.payer) =>
    exec(signer, buildRequestClose({ ...common(signer), channel }))
  const withdraw = (channel: ChannelRef, signer = p.payer) =>
    exec(signer, buildWithdraw({ ...common(signer), channel }))

  it('lets the payee settle during the grace period, and the payer withdraw the rest after it', async () => {
    const channel = await open(p)
    const payer = p.payer.toSuiAddress()
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.noCloseRequest))
    expect(await requestClose(channel, p.payee)).toEqual(aborted(ChannelAbort.notPayer))
    const requested = await requestClose(channel)
    expect(requested).toMatchObject({ status: 'ok', events: [{ type: 'CloseRequested' }] })
    const json = requested.status === 'ok' ? requested.events[0]?.json : undefined
    expect(BigInt(String(json?.grace_end_ms)) - BigInt(String(json?.requested_at_ms))).toBe(
      MIN_GRACE_MS,
    )
    const requestedAt = (await readChannel(client, channel.id)).closeRequestedMs
    // Asking again does not move the end of the grace period.
    ledger.advanceClock(60_000)
    expect(await requestClose(channel)).toMatchObject({ status: 'ok', events: [] })
    expect((await readChannel(client, channel.id)).closeRequestedMs).toBe(requestedAt)

    const voucher = await p.sign(channel.id, 250_000n)
    expect(
      (
        await exec(
          p.payee,
          buildSettle({ ...common(p.payee), channel, voucher, capture: 250_000n }),
        )
      ).status,
    ).toBe('ok')
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.graceNotOver))
    // The ledger's clock also follows the wall clock: a margin of 10 s.
    ledger.advanceClock(Number(MIN_GRACE_MS) - 60_000 - 10_000)
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.graceNotOver))
    ledger.advanceClock(10_000)
    expect(await withdraw(channel, p.payee)).toEqual(aborted(ChannelAbort.notPayer))
    const before = await usdc(payer)
    expect(await withdraw(channel)).toMatchObject({
      status: 'ok',
      events: [{ type: 'Withdrawn', json: { refunded: '750000' } }],
    })
    expect(await usdc(payer)).toBe(before + 750_000n)
    expect(await readChannel(client, channel.id)).toMatchObject({ escrow: 0n, closed: true })
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.closed))
  })

  it('refunds the whole deposit when nothing was settled (the clock moved over HTTP)', async () => {
    const channel = await open(p, { deposit: 1_500_000n })
    const before = await usdc(p.payer.toSuiAddress())
    expect((await requestClose(channel)).status).toBe('ok')
    const move = (body: unknown) =>
      fetch(`${ledger.url}/clock`, { method: 'POST', body: JSON.stringify(body) })
    expect((await move({ advanceMs: -1 })).status).toBe(400)
    // The ledger's clock also follows the wall clock: a margin of 10 s.
    expect((await move({ advanceMs: Number(MIN_GRACE_MS) - 10_000 })).status).toBe(200)
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.graceNotOver))
    const answer = await move({ advanceMs: 10_000 })
    expect((await answer.json()) as unknown).toEqual({ nowMs: expect.any(Number) })
    expect((await withdraw(channel)).status).toBe('ok')
    expect(await usdc(p.payer.toSuiAddress())).toBe(before + 1_500_000n)
  })

  it('tops up: adds to the deposit and cancels a close request; only the payer may', async () => {
    const channel = await open(p)
    expect(await exec(p.payee, buildTopUp({ ...common(p.payee), channel, amount: 1n }))).toEqual(
      aborted(ChannelAbort.notPayer),
    )
    expect((await requestClose(channel)).status).toBe('ok')
    const topUp = await exec(p.payer, buildTopUp({ ...common(p.payer), channel, amount: 500_000n }))
    expect(topUp).toMatchObject({
      status: 'ok',
      events: [
        { type: 'ToppedUp', json: { amount: '500000', deposited: '1500000' } },
        { type: 'CloseRequestCancelled', json: { channel_id: channel.id } },
      ],
    })
    expect(await readChannel(client, channel.id)).toMatchObject({
      escrow: 1_500_000n,
      deposited: 1_500_000n,
      closeRequestedMs: 0n,
    })
    ledger.advanceClock(Number(MIN_GRACE_MS))
    expect(await withdraw(channel)).toEqual(aborted(ChannelAbort.noCloseRequest))
    // The payee can now settle up to the new deposit.
    const payeeBefore = await usdc(p.payee.toSuiAddress())
    const voucher = await p.sign(channel.id, 1_500_000n)
    expect(
      (
        await exec(
          p.payee,
          buildSettle({ ...common(p.payee), channel, voucher, capture: 1_500_000n }),
        )
      ).status,
    ).toBe('ok')
    expect(await usdc(p.payee.toSuiAddress())).toBe(payeeBefore + 1_500_000n)
  })
})
