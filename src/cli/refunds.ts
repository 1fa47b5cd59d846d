/**
 * `tollgate refunds`: the refunds a seller owes, from its payment store. Refunds stay owed when no
 * operator key is configured; this lists them (and `--json` feeds scripts and alerts). With no
 * `--store`, it reads the store `tollgate gateway` writes, found from the same settings.
 *
 * @module
 */
import { existsSync } from 'node:fs'
import { Command, Option } from 'commander'
import pc from 'picocolors'
import type { PaymentStore } from 'tollgate'
import { formatAmount } from 'tollgate'

/** Opens a store from a `--store` value: a SQLite file path, `redis://…` or `postgres://…`. */
export async function openStoreFromUrl(value: string): Promise<PaymentStore> {
  if (value.startsWith('redis://') || value.startsWith('rediss://')) {
    const { createRedisStore } = await import('tollgate/stores/redis')
    return createRedisStore({ connection: value })
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) {
    const { createPostgresStore } = await import('tollgate/stores/postgres')
    return createPostgresStore({ connection: value })
  }
  const { createSqliteStore } = await import('tollgate/stores/sqlite')
  return createSqliteStore({ database: value.replace(/^sqlite:/, '') })
}

/** Where `refunds` reads: `--store` / `TOLLGATE_STORE` if given, else the gateway's own store. */
async function resolveStore(
  explicit: string | undefined,
  configFile: string | undefined,
): Promise<{ open: () => Promise<PaymentStore>; where: string } | { problem: string }> {
  if (explicit !== undefined) {
    return { open: () => openStoreFromUrl(explicit), where: explicit.replace(/\/\/[^@/]*@/, '//') }
  }
  // The gateway's settings (DATA_DIR, STORE, DATABASE_URL, REDIS_URL, STORE_PREFIX, its config
  // file): the same answer `tollgate gateway` uses, so both look at one store.
  const { configProblems, loadConfig } = await import('../../reference-gateway/config.js')
  const { describeStoreLocation, gatewayStoreLocation, openStoreAt } = await import(
    '../../reference-gateway/storeLocation.js'
  )
  let location: ReturnType<typeof gatewayStoreLocation>
  try {
    location = gatewayStoreLocation(
      loadConfig(configFile === undefined ? {} : { file: configFile }),
    )
  } catch (error) {
    const problems = configProblems(error)
    if (problems !== undefined) return { problem: problems.join('; ') }
    throw error
  }
  const where = describeStoreLocation(location)
  if (location.kind === 'missing') {
    return { problem: `${location.setting}: required when STORE=${location.store}` }
  }
  if (location.kind === 'memory') {
    return { problem: 'STORE=memory: the gateway keeps no records after it stops; nothing to list' }
  }
  if (location.kind === 'sqlite' && !existsSync(location.file)) {
    return {
      problem: `no gateway store at ${location.file}: run this where the gateway runs, with its DATA_DIR (or --store <file|url>)`,
    }
  }
  return { open: () => openStoreAt(location), where }
}

/** The `refunds` command. */
export function refundsCommand(): Command {
  return new Command('refunds')
    .description(
      "List the refunds owed to buyers (paid calls that failed and are not yet paid back). By default reads the gateway's store (the same DATA_DIR, STORE, DATABASE_URL, REDIS_URL settings as tollgate gateway).",
    )
    .addOption(
      new Option(
        '--store <location>',
        "SQLite file, redis:// or postgres:// URL (default: the gateway's store, .data/gateway/payments.db unless DATA_DIR, DATABASE_URL or REDIS_URL say otherwise)",
      ).env('TOLLGATE_STORE'),
    )
    .option(
      '-c, --config <file>',
      "the gateway's JSON settings file (also TOLLGATE_GATEWAY_CONFIG)",
    )
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'print JSON')
    .action(async (options: { store?: string; config?: string; limit: string; json?: boolean }) => {
      const resolved = await resolveStore(options.store, options.config)
      if ('problem' in resolved) {
        console.error(pc.red(`tollgate refunds: ${resolved.problem}`))
        process.exitCode = 2
        return
      }
      const store = await resolved.open()
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
          console.log(JSON.stringify({ store: resolved.where, owed: rows, counts }, null, 2))
          return
        }
        console.log(pc.dim(`store: ${resolved.where}`))
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
