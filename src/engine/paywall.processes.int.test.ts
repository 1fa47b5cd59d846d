/**
 * Several seller processes share one store: replay under load across processes, and crashes
 * (SIGKILL) at chosen points of settlement and refund. Real HTTP, real ledger client, real stores.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testModule } from '../../scripts/cliUnderTest.js'
import { serviceUrl, uniqueName } from '../stores/contract.js'
import type { SellerConfig } from '../testing/fixtures/seller.js'
import { useTestLedger } from '../testing/index.js'
import { x402PaymentHeader } from '../testing/payments.js'
import { parsePaymentRequired, x402Headers } from '../x402.js'

const workerPath = fileURLToPath(new URL('../testing/fixtures/seller.ts', import.meta.url))
const redisUrl = serviceUrl('REDIS_URL')
const databaseUrl = serviceUrl('DATABASE_URL')
const publicBaseUrl = 'http://seller.test'
const secret = 'one-secret-shared-by-every-seller-process'

const chain = useTestLedger({ beforeAll, afterAll }, { latencyMs: 30 })
let folder: string
const children = new Set<ChildProcess>()

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tollgate-sellers-'))
})

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(folder, { recursive: true, force: true })
})

type Seller = { port: number; child: ChildProcess; exited: Promise<number | null> }

/** Spawns a seller in a process of its own (`testing/fixtures/seller.ts`), paid on the test ledger. */
function spawnSeller(
  config: Omit<SellerConfig, 'ledgerUrl' | 'secret' | 'publicBaseUrl'>,
): Promise<Seller> {
  const full: SellerConfig = { ...config, ledgerUrl: chain.url, secret, publicBaseUrl }
  const worker = testModule(workerPath)
  const child = fork(worker.file, [], {
    execArgv: worker.execArgv,
    env: { ...process.env, SELLER_CONFIG: JSON.stringify(full) },
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  })
  children.add(child)
  // The child's error output is passed on, and its end kept, so that a seller that fails to start
  // says why in the test's own failure.
  let stderrTail = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk)
    stderrTail = (stderrTail + chunk.toString()).slice(-2000)
  })
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child)
      resolve(code)
    }),
  )
  return new Promise((resolve, reject) => {
    const ready = (m: { type: string; port: number }) => {
      if (m.type !== 'ready') return
      child.off('message', ready)
      resolve({ port: m.port, child, exited })
    }
    child.on('message', ready)
    child.once('exit', (code) =>
      reject(new Error(`seller exited early (${code}): ${stderrTail.trim() || 'no error output'}`)),
    )
  })
}

async function stop(sellers: Seller[]) {
  for (const s of sellers) s.child.kill('SIGTERM')
  await Promise.all(sellers.map((s) => s.exited))
}

function post(seller: Seller, path: string, headers: Record<string, string> = {}) {
  return fetch(`http://127.0.0.1:${seller.port}${path}`, { method: 'POST', headers })
}

async function paymentFor(seller: Seller, payer: Ed25519Keypair, path = '/paid') {
  const challenge = await post(seller, path)
  const requirement = parsePaymentRequired(await challenge.json()).accepts[0]!
  return { [x402Headers.payment]: await x402PaymentHeader(chain.client, payer, requirement) }
}

const usdc = (address: string) => chain.usdcBalance(address)

async function codes(responses: Response[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const r of responses) {
    const key = r.status === 200 ? 'served' : String(((await r.json()) as { code?: string }).code)
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

type StoreCase = { name: string; processes: number; store: () => SellerConfig['store'] | undefined }
const storeCases: StoreCase[] = [
  {
    name: 'one SQLite file',
    processes: 2,
    store: () => ({ kind: 'sqlite', file: join(folder, `${uniqueName('replay')}.db`) }),
  },
  {
    name: 'Redis',
    processes: 4,
    store: () =>
      redisUrl ? { kind: 'redis', url: redisUrl, prefix: `${uniqueName('t')}:` } : undefined,
  },
  {
    name: 'PostgreSQL',
    processes: 4,
    store: () =>
      databaseUrl ? { kind: 'postgres', url: databaseUrl, table: uniqueName('pay') } : undefined,
  },
]

describe('replay under load across processes', () => {
  for (const c of storeCases) {
    const reason = c.name === 'Redis' ? !redisUrl : c.name === 'PostgreSQL' ? !databaseUrl : false
    // Skipped only when the service URL is unset (serviceUrl fails the run under CI_REQUIRE_SERVICES=1).
    it.skipIf(reason)(
      `200 concurrent presentations over ${c.processes} processes sharing ${c.name}: one served`,
      async () => {
        const store = c.store()!
        const seller = new Ed25519Keypair().toSuiAddress()
        const sellers = await Promise.all(
          Array.from({ length: c.processes }, () => spawnSeller({ payTo: seller, store })),
        )
        try {
          const payer = chain.createTestWallet({ usdc: '1' })
          const headers = await paymentFor(sellers[0]!, payer)
          const before = await usdc(payer.toSuiAddress())
          const responses = await Promise.all(
            Array.from({ length: 200 }, (_, i) =>
              post(sellers[i % sellers.length]!, '/paid', headers),
            ),
          )
          // One served; the others were told to retry while it was being paid and served
          // (`settlement_pending`, with Retry-After), or that it was used, once it was.
          const counts = await codes(responses)
          expect(counts.served).toBe(1)
          expect((counts.replay ?? 0) + (counts.settlement_pending ?? 0)).toBe(199)
          const answers = ['served', 'replay', 'settlement_pending']
          expect(Object.keys(counts).filter((k) => !answers.includes(k))).toEqual([])
          expect(await usdc(seller)).toBe(20_000n)
          expect(before - (await usdc(payer.toSuiAddress()))).toBe(20_000n)
        } finally {
          await stop(sellers)
        }
      },
    )
  }
})

describe('crashes (SIGKILL) lose nothing and charge once', () => {
  const leases = { claimLeaseMs: 300, serveLeaseMs: 300 }

  it.each([
    ['claimed', 'after the claim, before submission', 0n],
    ['settled', 'after settlement, before serving', 20_000n],
  ] as const)(
    'SIGKILL %s (%s): the same payment presented again is served once, charged once',
    async (crashAt, _when, paidBeforeRestart) => {
      const store: SellerConfig['store'] = { kind: 'sqlite', file: join(folder, `${crashAt}.db`) }
      const seller = new Ed25519Keypair().toSuiAddress()
      const doomed = await spawnSeller({ payTo: seller, store, storeOptions: leases, crashAt })
      const payer = chain.createTestWallet({ usdc: '1' })
      const headers = await paymentFor(doomed, payer)
      await expect(post(doomed, '/paid', headers)).rejects.toThrow()
      expect(await doomed.exited).toBe(null) // killed by its own crash point
      expect(await usdc(seller)).toBe(paidBeforeRestart)

      const next = await spawnSeller({ payTo: seller, store, storeOptions: leases })
      try {
        await new Promise((r) => setTimeout(r, 400)) // the dead process's lease runs out
        const again = await post(next, '/paid', headers)
        expect(again.status).toBe(200)
        expect(again.headers.get(x402Headers.paymentResponse)).toBeTruthy()
        expect(await codes([await post(next, '/paid', headers)])).toEqual({ replay: 1 })
        expect(await usdc(seller)).toBe(20_000n)
      } finally {
        await stop([next])
      }
    },
  )

  it.each(['refund-recorded', 'refund-submitted'] as const)(
    'during a refund (%s): the refund is paid exactly once after restart',
    async (crashAt) => {
      const store: SellerConfig['store'] = { kind: 'sqlite', file: join(folder, `${crashAt}.db`) }
      const sellerKey = new Ed25519Keypair()
      const seller = sellerKey.toSuiAddress()
      chain.faucet({ address: seller, sui: '1', usdc: '0' })
      const operatorKey = sellerKey.getSecretKey()
      const doomed = await spawnSeller({
        payTo: seller,
        store,
        operatorKey,
        refundEveryMs: 50,
        crashAt,
      })
      const payer = chain.createTestWallet({ usdc: '1' })
      const start = await usdc(payer.toSuiAddress())
      const response = await post(doomed, '/boom', await paymentFor(doomed, payer, '/boom'))
      expect(response.status).toBe(500)
      expect(await doomed.exited).toBe(null) // killed by its own crash point
      if (crashAt === 'refund-recorded') {
        expect(await usdc(payer.toSuiAddress())).toBe(start - 20_000n) // recorded, never submitted
      }

      const next = await spawnSeller({ payTo: seller, store, operatorKey, refundEveryMs: 50 })
      try {
        await expect.poll(() => usdc(payer.toSuiAddress()), { timeout: 10_000 }).toBe(start)
        await new Promise((r) => setTimeout(r, 300)) // more refund runs: nothing more is paid
        expect(await usdc(payer.toSuiAddress())).toBe(start)
        expect(await usdc(seller)).toBe(0n)
      } finally {
        await stop([next])
      }
    },
  )
})

/** Every paid call of a process killed mid-call: its buyers either come back or they do not. */
describe('a process killed (SIGKILL) with paid calls in flight', () => {
  const price = 20_000n
  const calls = 16
  // Short, so that the test runs in seconds (the defaults are 30 s, 10 s and 10 s), yet long enough
  // that the first re-presentations surely meet the dead process's lease on a loaded machine.
  const serveLeaseMs = 5_000
  const sweepGraceMs = 3_000
  const sweepEveryMs = 200

  for (const c of storeCases) {
    const reason = c.name === 'Redis' ? !redisUrl : c.name === 'PostgreSQL' ? !databaseUrl : false
    it.skipIf(reason)(
      `${c.name}: a buyer who presents the payment again is told to retry, then served once; the others are refunded within the window`,
      async () => {
        const store = c.store()!
        const sellerKey = new Ed25519Keypair()
        const seller = sellerKey.toSuiAddress()
        chain.faucet({ address: seller, sui: '1', usdc: '0' })
        const common = {
          payTo: seller,
          store,
          storeOptions: { serveLeaseMs },
          operatorKey: sellerKey.getSecretKey(),
          refundEveryMs: 100,
          sweepEveryMs,
          sweepGraceMs,
        }
        // A serves slowly and dies mid-call; B shares its store (another process, or A restarted).
        const [doomed, next] = await Promise.all([
          spawnSeller({ ...common, slowMs: 600_000 }),
          spawnSeller({ ...common, slowMs: 0 }),
        ])
        try {
          const buyers = await Promise.all(
            Array.from({ length: calls }, async () => {
              const wallet = chain.createTestWallet({ usdc: '1' })
              const address = wallet.toSuiAddress()
              const headers = await paymentFor(doomed, wallet, '/slow')
              return { address, headers, start: await usdc(address) }
            }),
          )
          let handling = 0
          doomed.child.on('message', (m: { type: string }) => {
            if (m.type === 'handling') handling++
          })
          const inFlight = buyers.map((b) => post(doomed, '/slow', b.headers).catch(() => null))
          await expect.poll(() => handling, { timeout: 30_000 }).toBe(calls)
          // Every call is paid, settled and running: the process dies.
          doomed.child.kill('SIGKILL')
          expect(await doomed.exited).toBe(null)
          expect(await Promise.all(inFlight)).toEqual(buyers.map(() => null))

          // Half the buyers present the same payment again at once: the dead process's lease may
          // still be running, so they are told to retry — never that the payment was used.
          const returning = buyers.slice(0, calls / 2)
          const away = buyers.slice(calls / 2)
          const first = await Promise.all(returning.map((b) => post(next, '/slow', b.headers)))
          for (const response of first) {
            expect(response.status).toBe(402)
            expect(((await response.json()) as { code?: string }).code).toBe('settlement_pending')
            const after = Number(response.headers.get('retry-after'))
            expect(after).toBeGreaterThanOrEqual(1)
            expect(after).toBeLessThanOrEqual(Math.ceil(serveLeaseMs / 1000))
          }
          // Every buyer was charged once (the ledger's balances).
          expect(await usdc(seller)).toBe(price * BigInt(calls))
          for (const b of buyers) expect(await usdc(b.address)).toBe(b.start - price)
          // They follow Retry-After until answered: each is served once.
          const served = await Promise.all(
            returning.map(async (b) => {
              for (let attempt = 0; attempt < 10; attempt++) {
                const response = await post(next, '/slow', b.headers)
                if (response.status === 200) return 'served'
                const body = (await response.json()) as { code?: string }
                if (body.code !== 'settlement_pending') return String(body.code)
                const wait = Number(response.headers.get('retry-after')) * 1000
                await new Promise((resolve) => setTimeout(resolve, wait))
              }
              return 'gave up'
            }),
          )
          expect(served).toEqual(returning.map(() => 'served'))

          // The others never come back: refunded within lease + grace + sweep interval (and the
          // refund worker's turn), read from the ledger's balances.
          await expect
            .poll(
              async () => Promise.all(away.map(async (b) => (await usdc(b.address)) - b.start)),
              {
                timeout: serveLeaseMs + sweepGraceMs + 10_000,
                interval: 200,
              },
            )
            .toEqual(away.map(() => 0n))
          // Settled: nothing more moves (no double refund, no refund of a served call).
          await new Promise((resolve) => setTimeout(resolve, sweepGraceMs))
          for (const b of returning) expect(await usdc(b.address)).toBe(b.start - price)
          for (const b of away) expect(await usdc(b.address)).toBe(b.start)
          expect(await usdc(seller)).toBe(price * BigInt(returning.length))
          // Presented again now: used (served), or refunded — never served a second time.
          expect(await codes([await post(next, '/slow', returning[0]!.headers)])).toEqual({
            replay: 1,
          })
          const late = await post(next, '/slow', away[0]!.headers)
          expect(late.status).toBe(402)
          expect(await late.json()).toMatchObject({
            code: 'replay',
            refund: { status: 'refunded' },
          })
        } finally {
          await stop([next])
          if (doomed.child.exitCode === null && doomed.child.signalCode === null) {
            doomed.child.kill('SIGKILL')
          }
        }
      },
    )
  }
})

describe('ledger faults', () => {
  it.each([
    ['a lost response', { loseNextResponses: 1 }],
    ['a node that is down', { failNextExecutions: 1 }],
    ['a timeout', { slowMs: 1_500 }],
  ] as const)('after %s the same payment presented again is settled once', async (_name, fault) => {
    const store: SellerConfig['store'] = {
      kind: 'sqlite',
      file: join(folder, `${uniqueName('fault')}.db`),
    }
    const seller = new Ed25519Keypair().toSuiAddress()
    const s = await spawnSeller({ payTo: seller, store, ledgerTimeoutMs: 1_000 })
    try {
      const payer = chain.createTestWallet({ usdc: '1' })
      const headers = await paymentFor(s, payer)
      Object.assign(chain.faults, fault)
      setTimeout(() => Object.assign(chain.faults, { slowMs: 0 }), 2_500).unref()
      // The ledger client looks a lost answer up by digest; a refused one leaves nothing behind.
      // Either way the buyer presents the same payment until it is served, and is charged once.
      const statuses: number[] = []
      for (let attempt = 0; attempt < 3 && !statuses.includes(200); attempt++) {
        statuses.push((await post(s, '/paid', headers)).status)
      }
      expect(statuses.filter((status) => status === 200)).toHaveLength(1)
      expect(statuses.filter((status) => status !== 200 && status !== 402)).toEqual([])
      expect(await codes([await post(s, '/paid', headers)])).toEqual({ replay: 1 })
      expect(await usdc(seller)).toBe(20_000n)
    } finally {
      Object.assign(chain.faults, { loseNextResponses: 0, failNextExecutions: 0, slowMs: 0 })
      await stop([s])
    }
  })
})
