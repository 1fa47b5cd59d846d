/**
 * `tollgate refunds`: the refunds a seller owes, from its payment store. Refunds stay owed when no
 * operator key is configured; this lists them (and `--json` feeds scripts and alerts).
 *
 * @module
 */
import { Command, Option } from 'commander'
import pc from 'picocolors'
import { formatAmount } from '../money.js'
import type { PaymentStore } from '../stores/types.js'

/** Opens a store from a `--store` value: a SQLite file path, `redis://…` or `postgres://…`. */
export async function openStoreFromUrl(value: string): Promise<PaymentStore> {
  if (value.startsWith('redis://') || value.startsWith('rediss://')) {
    const { createRedisStore } = await import('../stores/redis.js')
    return createRedisStore({ connection: value })
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) {
    const { createPostgresStore } = await import('../stores/postgres.js')
    return createPostgresStore({ connection: value })
  }
  const { createSqliteStore } = await import('../stores/sqlite.js')
  return createSqliteStore({ database: value.replace(/^sqlite:/, '') })
}

/** The `refunds` command. */
export function refundsCommand(): Command {
  return new Command('refunds')
    .description(
      'List the refunds owed to buyers (paid calls that failed and are not yet paid back)',
    )
    .addOption(
      new Option('--store <location>', 'SQLite file, redis:// or postgres:// URL')
        .env('TOLLGATE_STORE')
        .default('.data/payments.db'),
    )
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'print JSON')
    .action(async (options: { store: string; limit: string; json?: boolean }) => {
      const store = await openStoreFromUrl(options.store)
      try {
        const owed = await store.listRefundsDue({ limit: Number(options.limit) })
        const counts = await store.counts()
        if (options.json) {
          const rows = owed.map((r) => ({
            digest: r.digest,
            payer: r.settlement?.payer,
            amount: r.settlement ? formatAmount(r.settlement.amount) : undefined,
            reason: r.refund?.reason,
            owedAt: r.refund?.owedAt.toISOString(),
            refundTransaction: r.refund?.transaction?.refundDigest,
          }))
          console.log(JSON.stringify({ owed: rows, counts }, null, 2))
          return
        }
        console.log(
          `${pc.bold(String(counts.refund_due))} refunds owed, ${counts.refunded} paid back.`,
        )
        for (const r of owed) {
          const amount = r.settlement ? formatAmount(r.settlement.amount) : '?'
          console.log(
            `  ${r.digest}  ${amount} USDC → ${r.settlement?.payer ?? '?'}  ${pc.dim(r.refund?.reason ?? '')}`,
          )
        }
      } finally {
        await store.close()
      }
    })
}
