/**
 * Set-up shared by the gateway's money tests: an embedded gateway (the ledger emulator, the stub
 * upstreams, SQLite or PostgreSQL) with hooks that let a test reset a buyer's connection at a
 * chosen point, a paid call sent on a raw TCP socket that can be reset at any moment, and the real
 * `tollgate gateway` started as a child process (to be killed). Balances are read from the ledger.
 *
 * @module
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import pg from 'pg'
import { expect } from 'vitest'
import { cliModule } from '../scripts/cliUnderTest.js'
import type { SellerEvent } from '../src/engine/sellerTypes.js'
import { uniqueName } from '../src/stores/contract.js'
import type { StartedLedger, StubUpstreams } from '../src/testing/index.js'
import { x402PaymentHeader } from '../src/testing/payments.js'
import { parsePaymentRequired, x402Headers } from '../src/x402.js'
import { loadConfig } from './config.js'
import type { KeyStore } from './inference/keys.js'
import { type RunningGateway, startGateway } from './server/server.js'

/** A running embedded gateway with reset hooks. */
export type MoneyStack = {
  gateway: RunningGateway
  emulator: StartedLedger
  stubs: StubUpstreams
  ledger: SuiGrpcClient
  /**
   * One-shot hooks by name: `settled:<payer>` (the payment settled), `crediting:<key id>` (a top-up
   * is writing the credit), `credited:<key id>` (it was written).
   */
  triggers: Map<string, () => void>
  /** Resolves once the gateway's server has seen the connection from `localPort` close. */
  closed(localPort: number): Promise<void>
  /**
   * The settings that name the gateway's relational store (`DATA_DIR`, or `DATABASE_URL` and its
   * schema): what `tollgate keys` needs to open the same store.
   */
  storeEnv: Record<string, string>
  close(): Promise<void>
}

/**
 * Starts the embedded gateway; on PostgreSQL (`databaseUrl`) in a schema and store prefix of its
 * own, dropped on `close()`.
 */
export async function startMoneyStack(databaseUrl?: string): Promise<MoneyStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-money-'))
  const schema = uniqueName('money').toLowerCase()
  const env: Record<string, string> =
    databaseUrl === undefined
      ? {}
      : { DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema, STORE_PREFIX: schema }
  const triggers = new Map<string, () => void>()
  const fire = (name: string) => {
    const trigger = triggers.get(name)
    triggers.delete(name)
    trigger?.()
  }
  const gateway = await startGateway({
    config: loadConfig({
      env,
      overrides: { port: 0, dataDir, emulatorLatencyMs: 20, logLevel: 'silent' },
    }),
    onEvent: (event: SellerEvent) => {
      if (event.type === 'settled') fire(`settled:${event.payment.payer}`)
    },
  })
  // The key store object the top-up route calls: hooks as the credit is written and once it is
  // (the store itself stays the real one).
  const keys = gateway.inference.keys as { -readonly [K in keyof KeyStore]: KeyStore[K] }
  const topUp = keys.topUp
  keys.topUp = (id, amount, reference, options) => {
    const credited = topUp(id, amount, reference, options)
    fire(`crediting:${id}`)
    return credited.then((result) => {
      fire(`credited:${id}`)
      return result
    })
  }
  const emulator = gateway.emulator as StartedLedger
  const stubs = gateway.stubs as StubUpstreams
  // The server's side of each connection, by the client's port: its close is when the gateway saw
  // the buyer hang up.
  const connections = new Map<number, Promise<void>>()
  gateway.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort
    if (port === undefined) return
    connections.set(port, new Promise((resolve) => socket.once('close', () => resolve())))
  })
  return {
    gateway,
    emulator,
    stubs,
    ledger: new SuiGrpcClient({ network: 'mainnet', baseUrl: emulator.url }),
    triggers,
    async closed(localPort) {
      await until(() => connections.has(localPort))
      await connections.get(localPort)
      connections.delete(localPort)
    },
    storeEnv: { DATA_DIR: dataDir, ...env },
    async close() {
      await gateway.stop()
      if (databaseUrl !== undefined) {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        try {
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        } finally {
          await client.end()
        }
      }
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** The USDC balance of `address`, from the ledger. */
export async function usdcOf(stack: MoneyStack, address: string): Promise<bigint> {
  const { balance } = await stack.ledger.core.getBalance({
    owner: address,
    coinType: stack.emulator.usdcType,
  })
  return BigInt(balance.balance)
}

/** Waits until `check` holds (or throws after `ms`). */
export async function until(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/**
 * Waits until the gateway has finished with the requests sent so far: a request whose buyer reset
 * the connection may still be settling (nothing shows it in flight until it settled), so this
 * first leaves `graceMs` for that (far more than the emulator's 20 ms settlement; a wait, never a
 * timing assertion), then waits until every settled paid call is recorded, served or refund due.
 */
export async function quiesce(stack: MoneyStack, graceMs = 500): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, graceMs))
  await until(() => stack.gateway.gateway.paidInFlight() === 0)
}

/** Waits until every paid call is recorded (served or refund due) and every refund due is paid. */
export async function settleDown(stack: MoneyStack): Promise<void> {
  const refunder = stack.gateway.gateway.paywall.seller.refunder
  await quiesce(stack)
  await until(async () => {
    await refunder.runOnce()
    return (await refunder.owed()).length === 0
  })
}

/**
 * How a buyer hangs up: `reset` sends a TCP RST (a server that is not reading notices only when it
 * writes), `close` a FIN (noticed at once).
 */
export type HangUp = 'reset' | 'close'

/** Where a paid call goes: a gateway's URL, and the ledger the buyer signs against. */
export type PaidTarget = { gateway: { url: string }; ledger: SuiGrpcClient }

/** A paid call sent on a raw socket. */
export type TcpCall = {
  /** The price the 402 asked, in base units. */
  price: bigint
  /** The payment's request headers, to present the same payment again. */
  payment: Record<string, string>
  /** The client's port of the connection (see {@link MoneyStack.closed}). */
  localPort: number
  /** Hangs up (default `reset`), if the connection is still open. */
  reset(how?: HangUp): void
  /** Resolves when the connection is over (answered and closed, or reset). */
  over: Promise<void>
  /** Whether the whole answer arrived before the connection ended (the buyer did not leave first). */
  answered(): boolean
  /** The answer's status, once its head arrived. */
  status(): number | undefined
}

/**
 * What of an HTTP/1.1 answer read from a raw socket (latin1) has arrived: its status once the head
 * is in, and whether the whole answer is (by `content-length`, or a chunked body's last chunk).
 */
export function rawAnswer(received: string): { status: number | undefined; whole: boolean } {
  const end = received.indexOf('\r\n\r\n')
  if (end === -1) return { status: undefined, whole: false }
  const head = received.slice(0, end).toLowerCase()
  const status = Number(/^http\/1\.1 (\d{3})/.exec(head)?.[1])
  const length = /\r\ncontent-length: *(\d+)/.exec(head)?.[1]
  const body = received.slice(end + 4)
  const whole =
    length !== undefined
      ? Buffer.byteLength(body, 'latin1') >= Number(length)
      : /\r\ntransfer-encoding: *chunked/.test(head)
        ? body.endsWith('0\r\n\r\n')
        : false
  return { status: Number.isNaN(status) ? undefined : status, whole }
}

/**
 * Pays `path` with a JSON `body` (a fresh challenge, signed by `payer`) and sends the paid request
 * on a raw TCP socket, so that the test can reset it at any moment. `arm` gets the reset before the
 * request is sent (to put it in {@link MoneyStack.triggers}); the request waits for what it returns.
 */
export async function paidOverTcp(
  stack: PaidTarget,
  payer: Ed25519Keypair,
  path: string,
  body: unknown,
  arm?: (reset: (how?: HangUp) => void) => void | Promise<void>,
): Promise<TcpCall> {
  const text = JSON.stringify(body)
  const challenge = await fetch(`${stack.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  })
  expect(challenge.status).toBe(402)
  const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
  if (requirement === undefined) throw new Error('no x402 requirement')
  const header = await x402PaymentHeader(stack.ledger, payer, requirement)
  const { port } = new URL(stack.gateway.url)
  const socket: Socket = connect(Number(port), '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const over = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const reset = (how: HangUp = 'reset') => {
    if (socket.destroyed) return
    if (how === 'reset') socket.resetAndDestroy()
    else socket.destroy()
  }
  await arm?.(reset)
  // Kept alive, as a real client's connection is (the server keeps reading it, and so sees a
  // hang-up at once); closed by us once the whole answer has arrived.
  let received = ''
  let answered = false
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    received += chunk
    if (rawAnswer(received).whole) {
      answered = true
      socket.destroy()
    }
  })
  socket.write(
    [
      `POST ${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(text)}`,
      `${x402Headers.payment}: ${header}`,
      '',
      text,
    ].join('\r\n'),
  )
  return {
    price: BigInt(requirement.maxAmountRequired),
    payment: { [x402Headers.payment]: header },
    localPort: socket.localPort as number,
    reset,
    over,
    answered: () => answered,
    status: () => rawAnswer(received).status,
  }
}

/** A `tollgate gateway` child process. */
export type GatewayProcess = {
  /** `http://127.0.0.1:<port>`, once it listens. */
  url: string
  child: ChildProcess
  /** Resolves with the exit code (`null` when killed by a signal). */
  exited: Promise<number | null>
}

/**
 * Starts `tollgate gateway --port 0` (the real CLI, under tsx) configured by `env` alone (with
 * `PATH` and `NO_COLOR`), and resolves once it listens. The child is in `children` until it exits,
 * so that a test's `afterAll` can kill what is left.
 */
export function startGatewayProcess(
  env: Record<string, string>,
  children?: Set<ChildProcess>,
): Promise<GatewayProcess> {
  const cli = cliModule()
  const child = fork(cli.file, ['gateway', '--port', '0'], {
    execArgv: cli.execArgv,
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  children?.add(child)
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children?.delete(child)
      resolve(code)
    }),
  )
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match?.[1]) resolve({ url: match[1], child, exited })
    })
    child.once('exit', (code) => reject(new Error(`gateway exited early (${code}): ${out}`)))
  })
}
