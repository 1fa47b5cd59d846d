/**
 * What the gateway checks before it says it is listening: a data folder it can write, a port it can
 * bind, a payment store it can reach. Each failure is a {@link configError} (`invalid_config`) with
 * one problem naming
 * the setting (by its environment variable and file key) and the cause; secret values (database and
 * Redis URLs) are never echoed. Also: errors described for logs and for `/readyz`, with their cause.
 *
 * @module
 */
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { hasCode, PaymentError, type PaymentStore } from 'tollgate'
import { configError, configProblems, type GatewayConfig, settingVariables } from './config.js'

/** How long the start waits for the payment store to answer, ms. */
export const storeCheckTimeoutMs = 10_000

function problem(setting: keyof typeof settingVariables, message: string): PaymentError {
  return configError([`${settingVariables[setting]} (${setting}): ${message}`])
}

/**
 * Makes sure `directory` exists (created if missing) and is a folder the gateway can write.
 *
 * @throws {PaymentError} `invalid_config`, naming `setting` and the cause (`is a file`, `EACCES`, `ENOTDIR`, …).
 */
export function checkWritableFolder(setting: 'dataDir' | 'blobDir', directory: string): void {
  const path = resolve(directory)
  try {
    // One folder at a time, from the nearest one that exists: a bounded number of steps. A
    // recursive mkdir loops without end where the parent cannot hold folders (under /proc on Node 20).
    const missing: string[] = []
    for (let current = path; ; current = dirname(current)) {
      const existing = statSync(current, { throwIfNoEntry: false })
      if (existing !== undefined) {
        // A file further up is left to mkdir (ENOTDIR below).
        if (current === path && !existing.isDirectory()) {
          throw problem(setting, `${path} is a file, not a folder`)
        }
        break
      }
      if (dirname(current) === current) break
      missing.unshift(current)
    }
    for (const folder of missing) {
      try {
        mkdirSync(folder)
      } catch (error) {
        // Another process made it first.
        if ((error as { code?: unknown }).code !== 'EEXIST') throw error
      }
    }
    const probe = join(path, `.tollgate-write-check-${process.pid}`)
    writeFileSync(probe, '')
    rmSync(probe, { force: true })
  } catch (error) {
    if (configProblems(error) !== undefined) throw error
    throw problem(setting, `cannot write to ${path} (${reasonOf(error)})`)
  }
}

/**
 * The problem of a failed `listen()`, naming `PORT` or `HOST`; `undefined` for an error that is not
 * about the address.
 */
export function listenProblem(
  error: unknown,
  config: Pick<GatewayConfig, 'host' | 'port'>,
): PaymentError | undefined {
  const code = (error as { code?: unknown } | null)?.code
  const where = `${config.host}:${config.port}`
  switch (code) {
    case 'EADDRINUSE':
      return problem(
        'port',
        `${where} is already in use (EADDRINUSE); stop what listens there, or choose another port (--port, PORT=0 for any free one)`,
      )
    case 'EACCES':
      return problem('port', `not allowed to listen on ${where} (EACCES); use a port above 1023`)
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return problem('host', `${config.host} is not an address of this machine (${code})`)
    default:
      return undefined
  }
}

/**
 * Asks the store one question (its counts) and fails the start when it does not answer within
 * `timeoutMs`: a database that refuses the user, is not running or does not exist.
 *
 * @throws {PaymentError} `invalid_config`, naming the store's setting (`DATABASE_URL`, `REDIS_URL`, `DATA_DIR`) and the
 *   cause, with the configured URLs removed from it.
 */
export async function checkStoreReachable(
  store: PaymentStore,
  kind: 'sqlite' | 'postgres' | 'redis' | 'memory',
  config: GatewayConfig,
  timeoutMs = storeCheckTimeoutMs,
): Promise<void> {
  if (kind === 'memory') return
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([
      store.counts(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new PaymentError('timeout', `no answer within ${timeoutMs / 1000} s`)),
          timeoutMs,
        )
      }),
    ])
  } catch (thrown) {
    // A store reports its backend's failure as a store_error whose cause is the driver's error:
    // that is what the operator needs to read.
    const error =
      hasCode(thrown, 'store_error') && thrown.cause !== undefined ? thrown.cause : thrown
    const cause = reasonOf(error, secretValues(config))
    if (kind === 'postgres') {
      // 28000 / 28P01: no user, an unknown role or a wrong password.
      const code = (error as { code?: unknown } | null)?.code
      const hint =
        code === '28000' || code === '28P01'
          ? '; give the user and password in the URL (postgres://USER:PASSWORD@HOST:5432/DATABASE)'
          : ''
      throw problem('databaseUrl', `cannot use the PostgreSQL store: ${cause}${hint}`)
    }
    if (kind === 'redis') throw problem('redisUrl', `cannot use the Redis store: ${cause}`)
    throw problem('dataDir', `cannot use the SQLite store in ${resolve(config.dataDir)}: ${cause}`)
  } finally {
    clearTimeout(timer)
  }
}

/** The configured values that must never appear in a message or a log. */
export function secretValues(config: Partial<GatewayConfig>): string[] {
  return [
    config.databaseUrl,
    config.redisUrl,
    config.operatorKey,
    ...(config.challengeSecrets ?? []),
    ...Object.values(config.providerKeys ?? {}),
  ].filter((value): value is string => typeof value === 'string' && value.length > 0)
}

/**
 * One line saying why `error` happened: its message (and code), then each cause's, with every
 * value of `secrets` replaced by `[redacted]`. At most 500 characters.
 */
export function reasonOf(error: unknown, secrets: readonly string[] = []): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    parts.push(oneError(current))
    current = (current as { cause?: unknown }).cause
  }
  let text = parts.filter((part) => part !== '').join(': ') || 'unknown error'
  for (const secret of secrets) text = text.replaceAll(secret, '[redacted]')
  text = text.replace(/\s+/g, ' ')
  return text.length > 500 ? `${text.slice(0, 499)}…` : text
}

/**
 * An error as log fields: `name`, `code`, `message` and the same for its `cause` chain (secrets
 * replaced). For the gateway's `unhandled` and `store_connection_error` logs.
 */
export function errorFields(
  error: unknown,
  secrets: readonly string[] = [],
): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  if (error instanceof Error) {
    fields.name = error.name
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' || typeof code === 'number') fields.code = code
  }
  fields.message = reasonOf(error, secrets)
  return fields
}

function oneError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    const message = error.message.trim()
    // AggregateError (e.g. a connection refused on every address) carries its causes in `errors`.
    const inner =
      message === '' && error instanceof AggregateError
        ? error.errors.map(oneError).filter((part) => part !== '')[0]
        : undefined
    const text = inner ?? (message === '' ? error.name : message)
    return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text
  }
  if (typeof error === 'string') return error
  return ''
}
