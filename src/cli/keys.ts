/**
 * `tollgate keys`: API keys of the gateway's private inference API, and their USDC credit. It finds
 * the gateway's relational store the way `tollgate gateway` does — the same settings (environment,
 * `--config` file): PostgreSQL when `DATABASE_URL` is set, else SQLite in `DATA_DIR` — so run it with
 * the gateway's environment. A key is shown once, when created; only its hash is stored.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { Command, InvalidArgumentError } from 'commander'
import pc from 'picocolors'
import { formatAmount, parseAmount } from 'tollgate'
import { configProblems, loadConfig } from '../../reference-gateway/config.js'
import { databaseLocationOf, openDatabase } from '../../reference-gateway/db/database.js'
import { createKeyStore, type KeyStore } from '../../reference-gateway/inference/keys.js'
import { checkWritableFolder, reasonOf, secretValues } from '../../reference-gateway/startup.js'

function usdc(value: string): bigint {
  try {
    const units = parseAmount(value)
    if (units > 0n) return units
  } catch {
    // Not an amount at all: the same answer as for one that is not positive.
  }
  throw new InvalidArgumentError('must be a USDC amount more than 0, like 5 or 0.25')
}

function owner(value: string): string {
  if (isValidSuiAddress(normalizeSuiAddress(value)) && /^0x[0-9a-fA-F]{1,64}$/.test(value)) {
    return normalizeSuiAddress(value)
  }
  throw new InvalidArgumentError('must be a Sui address, 0x and up to 64 hex digits')
}

async function withKeys<T>(
  options: { config?: string },
  run: (keys: KeyStore) => Promise<T>,
): Promise<T> {
  let config: ReturnType<typeof loadConfig>
  let location: ReturnType<typeof databaseLocationOf>
  try {
    config = loadConfig(options.config === undefined ? {} : { file: options.config })
    location = databaseLocationOf(config)
    // A data folder that is a file, or one that cannot be created: one line naming DATA_DIR.
    if (location.kind === 'sqlite') checkWritableFolder('dataDir', config.dataDir)
  } catch (error) {
    const problems = configProblems(error)
    if (problems !== undefined) {
      // One line, as `tollgate gateway` says it: the setting and the cause.
      console.error(pc.red(`tollgate keys: ${problems.join('; ')}`))
      process.exit(2)
    }
    throw error
  }
  let database: Awaited<ReturnType<typeof openDatabase>>
  try {
    database = await openDatabase(location)
  } catch (error) {
    // A driver that is not installed is said as for any missing optional package (src/cli.ts).
    if ((error as { code?: unknown } | undefined)?.code === 'ERR_MODULE_NOT_FOUND') throw error
    // A database that does not answer or refuses: one line naming the setting, never its URL.
    const setting =
      location.kind === 'postgres' ? 'DATABASE_URL (databaseUrl)' : 'DATA_DIR (dataDir)'
    console.error(
      pc.red(
        `tollgate keys: ${setting}: cannot open the gateway's database: ${reasonOf(error, secretValues(config))}`,
      ),
    )
    process.exit(2)
  }
  try {
    return await run(createKeyStore(database.db, { sqlite: database.sqlite }))
  } finally {
    await database.close()
  }
}

const configOption = [
  '-c, --config <file>',
  'JSON settings file (also TOLLGATE_GATEWAY_CONFIG)',
] as const

/** Builds the `keys` sub-command. */
export function keysCommand(): Command {
  const keys = new Command('keys').description(
    "API keys of the gateway's private inference API and their USDC credit (same settings as tollgate gateway)",
  )
  keys
    .command('create')
    .description('Create a key (shown once) with an optional starting credit')
    .option('--credit <usdc>', 'starting credit in USDC', usdc)
    .option('--name <name>', 'a label for the key')
    .option(
      '--owner <address>',
      'the Sui address that owns the key: it sees and manages it in the console (/console)',
      owner,
    )
    .option(...configOption)
    .option('--json', 'print JSON')
    .action(
      async (options: {
        credit?: bigint
        name?: string
        owner?: string
        config?: string
        json?: boolean
      }) => {
        const created = await withKeys(options, (store) =>
          store.create({ credit: options.credit, name: options.name, owner: options.owner }),
        )
        if (options.json) {
          console.log(
            JSON.stringify({
              id: created.id,
              key: created.key,
              credit: formatAmount(created.credit),
              owner: created.owner,
            }),
          )
          return
        }
        console.log(`${pc.bold('key')}     ${created.key}`)
        console.log(`${pc.bold('id')}      ${created.id}`)
        console.log(`${pc.bold('credit')}  ${formatAmount(created.credit)} USDC`)
        if (created.owner !== null) console.log(`${pc.bold('owner')}   ${created.owner}`)
        console.log(pc.yellow('Store the key now: it is not shown again (only its hash is kept).'))
      },
    )
  keys
    .command('list')
    .description('List the keys (never the secrets) with their credit')
    .option(...configOption)
    .option('--json', 'print JSON')
    .action(async (options: { config?: string; json?: boolean }) => {
      const list = await withKeys(options, (store) => store.list())
      if (options.json) {
        console.log(
          JSON.stringify(
            list.map((k) => ({ ...k, credit: formatAmount(k.credit) })),
            null,
            2,
          ),
        )
        return
      }
      if (list.length === 0) console.log('No keys. Create one: tollgate keys create --credit 5')
      for (const k of list) {
        const state = k.revokedAt === null ? '' : pc.red(' revoked')
        console.log(
          `${k.id}  …${k.hint}  ${formatAmount(k.credit)} USDC${state}  ${pc.dim(k.name ?? '')}${k.owner === null ? '' : pc.dim(`  owner ${k.owner}`)}`,
        )
      }
    })
  keys
    .command('revoke')
    .description('Revoke a key: it is refused from now on')
    .argument('<id>', 'the key id (key_…)')
    .option(...configOption)
    .action(async (id: string, options: { config?: string }) => {
      const revoked = await withKeys(options, (store) => store.revoke(id))
      if (!revoked) {
        console.error(pc.red(`No active key ${id}.`))
        process.exitCode = 1
        return
      }
      console.log(`Revoked ${id}.`)
    })
  keys
    .command('credit')
    .description('Add USDC credit to a key (the operator top-up)')
    .argument('<id>', 'the key id (key_…)')
    .argument('<usdc>', 'amount of USDC to add', usdc)
    .option(...configOption)
    .action(async (id: string, amount: bigint, options: { config?: string }) => {
      const result = await withKeys(options, (store) =>
        store.topUp(id, amount, `operator:${randomBytes(12).toString('hex')}`),
      )
      if (result.status !== 'credited') {
        console.error(pc.red(`No active key ${id}.`))
        process.exitCode = 1
        return
      }
      console.log(`${id}: credit ${formatAmount(result.credit)} USDC`)
    })
  return keys
}
