/**
 * `npx tsx bench/session/run.ts`: paid calls over one MPP session against the same route unpaid and
 * paid by one ledger transaction per call (MPP `charge`), on a ledger whose transactions take
 * `LEDGER_LATENCY_MS` (default 400) to commit, as on a real network. Two processes: the seller
 * (`bench/session/server.ts`: the local ledger and a paywall, its channel books in SQLite, and in
 * PostgreSQL when `DATABASE_URL` is set; `BENCH_STORES=sqlite,postgres,memory` to choose) and the
 * buyer (this process: `createSessionFetch` and `createPayingFetch` from `tollgate/client`).
 *
 * For each store, after a warm-up (the channel is opened then):
 * 1. calls/s at `BENCH_CONCURRENCY` in flight (default 32), `BENCH_CALLS` calls (default 2 000):
 *    unpaid, over the session (ratio to unpaid: target ≥ 0.5×), and paid by `charge`
 *    (`BENCH_CHARGE_CALLS`, default 16, at `BENCH_CHARGE_CONCURRENCY`, default 1: each waits for
 *    the ledger, and the buyer client's concurrent charges from one wallet can build the same
 *    transaction, refused as a replay);
 * 2. latency added over an unpaid call, one call at a time, alternating, `BENCH_ROUNDS` rounds
 *    (default 300): the difference of the medians (target ≤ 1 ms), with its 95% interval (a paired
 *    bootstrap of the rounds);
 * 3. ledger transactions per 1 000 calls over the session (the open and the close counted) and by
 *    `charge`; requests sent per session call (a voucher that arrives after a later one is refused
 *    as stale and the call paid again).
 *
 * Prints a markdown table with the load average at the start and the end of each store's run.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createChannelBook, createPayingFetch, createSessionFetch } from '../../src/client/index.js'
import { startScript } from '../script.js'
import {
  ask,
  callCells,
  closeSession,
  compareCalls,
  load,
  printCalls,
  settings,
} from './measure.js'

type Info = { url: string; ledgerUrl: string; package: string; registry: string; buyerKey: string }

const rows: string[] = []
for (const store of settings.stores) {
  const loadStart = load()
  const seller = await startScript<Info>(new URL('./server.ts', import.meta.url), {
    CHANNEL_STORE: store,
    LEDGER_LATENCY_MS: settings.latencyMs,
  })
  const transactions = async () =>
    (await ask<{ transactions: number }>(seller.process, 'count')).transactions
  try {
    const { url, ledgerUrl } = seller.info
    const signer = Ed25519Keypair.fromSecretKey(seller.info.buyerKey)
    const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledgerUrl })
    let sent = 0
    const counting: typeof fetch = (input, init) => {
      sent++
      return fetch(input, init)
    }
    const sessions = createSessionFetch({
      signer,
      client,
      pinned: [
        { network: 'mainnet', package: seller.info.package, registry: seller.info.registry },
      ],
      maxDeposit: 500_000_000n,
      deposit: () => 200_000_000n,
      book: createChannelBook(
        join(await mkdtemp(join(tmpdir(), 'tollgate-bench-book-')), 's.json'),
      ),
      fetch: counting,
    })
    const charge = createPayingFetch({ signer, ledger: ledgerUrl, limits: false, prefer: 'mpp' })
    const free = () => fetch(`${url}/free`)
    const paidBySession = () => sessions.fetch(`${url}/call`)

    // Warm-up: both paths, and the channel opened.
    for (let i = 0; i < 200; i++) await (await free()).arrayBuffer()
    for (let i = 0; i < 200; i++) await (await paidBySession()).arrayBuffer()

    const compared = await compareCalls({
      unpaid: free,
      session: paidBySession,
      charge: () => charge(`${url}/call`),
      transactions,
      sent: () => sent,
    })
    // Per 1 000 session calls: the calls' own transactions, plus the open and the close once.
    const closeTx = await closeSession(sessions, transactions)
    rows.push(`| ${store} ${callCells(compared, 1 + closeTx)} ${loadStart} → ${load()} |`)
  } finally {
    seller.process.kill()
  }
}

printCalls(['channel store'], rows)
