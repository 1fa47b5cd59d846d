/**
 * `npm run bench:session:write`: how long one voucher's write to the channel books takes — the
 * step a paid session call waits for before its answer leaves (`ChannelStore.acceptVoucher` with
 * the call's hold, then its commit, untimed) — back to back, and with the store left idle between
 * writes, as between the calls of one buyer: `BENCH_GAPS` ms (default `0,2,20`; `20` is about one
 * 16-token streamed answer of `npm run bench:session`). `BENCH_WRITES` writes per gap (default
 * 1 000; at most ten seconds of gaps each). Stores: `BENCH_STORES` (default `sqlite`, and `postgres`
 * when `DATABASE_URL` is set; the pool as the reference gateway makes it, tables named for this
 * process and dropped at the end).
 *
 * Prints a markdown table: per store and gap, the median and 90th percentile of one write, and the
 * median as a ratio to the same store's back-to-back median of the same run. A database server in
 * another process answers more slowly after idling (its process, and on a virtual machine its
 * processor, must wake): that ratio is what a benchmark of calls one at a time pays on top of the
 * statement itself.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { Session } from 'tollgate'
import { openSqliteDatabase } from 'tollgate/stores/sqlite'
import { load, median, percentile } from './measure.js'

const databaseUrl = process.env.DATABASE_URL
const stores = (
  process.env.BENCH_STORES ?? (databaseUrl === undefined ? 'sqlite' : 'sqlite,postgres')
)
  .split(',')
  .map((s) => s.trim())
const gaps = (process.env.BENCH_GAPS ?? '0,2,20').split(',').map(Number)
const writes = Number(process.env.BENCH_WRITES ?? 1000)
const prefix = `bench_write_${process.pid}`
const tables = { channels: `${prefix}_c`, holds: `${prefix}_h`, vouchers: `${prefix}_v` }

type Opened = { store: Session.ChannelStore; close(): Promise<void> }

async function open(kind: string): Promise<Opened> {
  if (kind === 'sqlite') {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-write-'))
    const database = openSqliteDatabase(join(folder, 'channels.db'))
    return {
      store: Session.createSqliteChannelStore({ database, ...tables }),
      close: async () => {
        database.close()
        rmSync(folder, { recursive: true, force: true })
      },
    }
  }
  if (kind === 'postgres') {
    if (databaseUrl === undefined) throw new Error('BENCH_STORES=postgres needs DATABASE_URL')
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 5, pipeline: true } as never)
    return {
      store: Session.createPostgresChannelStore({ pool, ...tables }),
      close: async () => {
        for (const name of Object.values(tables)) await pool.query(`DROP TABLE IF EXISTS "${name}"`)
        await pool.end()
      },
    }
  }
  throw new Error(`unknown store ${kind}`)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const rows: string[] = []
for (const kind of stores) {
  const { store, close } = await open(kind)
  try {
    const loadStart = load()
    const channelId = `0x${'ab'.repeat(32)}`
    await store.track({
      channelId,
      payer: `0x${'1'.repeat(64)}`,
      payee: `0x${'2'.repeat(64)}`,
      coinType: '0x2::sui::SUI',
      signer: 'ff'.repeat(32),
      deposit: 10n ** 15n,
      settled: 0n,
    })
    let amount = 0n
    /** One voucher with its call's hold: the write's time, ms (the commit after it untimed). */
    const write = async () => {
      amount += 1_000n
      const started = performance.now()
      const accepted = await store.acceptVoucher(channelId, amount, 'aa'.repeat(64), {
        amount: 100n,
        holdId: crypto.randomUUID(),
        leaseUntil: Date.now() + 60_000,
      })
      const ms = performance.now() - started
      if (accepted.status !== 'accepted' || accepted.hold?.status !== 'held') {
        throw new Error(`the voucher was not taken: ${accepted.status}`)
      }
      await store.commit(accepted.hold.holdId)
      return ms
    }
    for (let i = 0; i < 200; i++) await write()
    let baseline: number | undefined
    for (const gap of gaps) {
      const count = gap === 0 ? writes : Math.min(writes, Math.ceil(10_000 / gap))
      const times: number[] = []
      for (let i = 0; i < count; i++) {
        if (gap > 0) await sleep(gap)
        times.push(await write())
      }
      const m = median(times)
      baseline ??= m
      rows.push(
        `| ${kind} | ${gap} | ${count} | ${m.toFixed(3)} | ${percentile(times, 0.9).toFixed(3)} | ${(m / baseline).toFixed(2)}× | ${loadStart} → ${load()} |`,
      )
      console.error(rows.at(-1))
    }
  } finally {
    await close()
  }
}
console.log(
  '\n| store | idle ms before each write | writes | median ms | p90 ms | median vs back to back | load average |',
)
console.log('|---|---:|---:|---:|---:|---:|---|')
for (const row of rows) console.log(row)
