/**
 * The buyer's files under the config folder (`TOLLGATE_HOME` overrides it): `wallet.json` (the
 * key, 0600, never printed), `settings.json` (limits, ledger URL) and `spending.json` (what the
 * wallet limits count).
 *
 * @module
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { PaymentError } from 'tollgate'
import { spendingFileName, tollgateHome } from 'tollgate/client'
import { writeFileAtomic } from 'tollgate/node'
import { z } from 'zod'

const walletSchema = z.object({
  version: z.literal(1),
  scheme: z.literal('ED25519'),
  address: z.string().max(80),
  secretKey: z.string().startsWith('suiprivkey').max(200),
})

const amountText = z.string().regex(/^(off|\$?[0-9]{1,12}(\.[0-9]{1,6})?)$/)

const id = z.string().regex(/^0x[0-9a-f]{64}$/)

/**
 * `settings.json`: wallet limits (`"off"` turns one off), the ledger URL commands use when none is
 * given, and what the local ledger at `localLedger.url` reported about itself (its package and
 * escrow config ids, its USDC type) when `tollgate ledger` or `tollgate wallet fund` last met it:
 * the local ledger reports the mainnet chain id, so only its URL tells it apart, and the packages
 * a buyer calls on it come from here, never from a server's 402.
 */
export const settingsSchema = z.object({
  perTransaction: amountText.optional(),
  perDay: amountText.optional(),
  ledger: z.string().max(2048).optional(),
  localLedger: z
    .object({
      url: z.string().max(2048),
      chainId: z.string().max(100),
      usdcType: z.string().max(200),
      modulesPackage: id,
      escrowConfig: id,
      channelRegistry: id.optional(),
    })
    .strict()
    .optional(),
})

/** The CLI's settings. */
export type Settings = z.infer<typeof settingsSchema>

/** Paths of the buyer's files in `home` (default {@link tollgateHome}). */
export function walletPaths(home: string = tollgateHome()) {
  return {
    home,
    wallet: join(home, 'wallet.json'),
    settings: join(home, 'settings.json'),
    spending: join(home, spendingFileName),
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file)
    return true
  } catch {
    return false
  }
}

/**
 * Creates a new Ed25519 wallet in `wallet.json` (mode 0600, folder 0700).
 *
 * @throws {PaymentError} `invalid_config` when a wallet exists and `force` is not set.
 */
export async function createWalletFile(options: { home?: string; force?: boolean } = {}) {
  const paths = walletPaths(options.home)
  if (!options.force && (await exists(paths.wallet))) {
    throw new PaymentError(
      'invalid_config',
      `A wallet already exists at ${paths.wallet}; pass --force to replace it (its funds would be lost).`,
    )
  }
  const keypair = Ed25519Keypair.generate()
  const wallet = {
    version: 1,
    scheme: 'ED25519',
    address: keypair.toSuiAddress(),
    secretKey: keypair.getSecretKey(),
  }
  await writeFileAtomic(paths.wallet, `${JSON.stringify(wallet, null, 2)}\n`, 0o600)
  return { address: wallet.address, file: paths.wallet }
}

/**
 * Loads the wallet key. Refuses a key file that others can read (like ssh does).
 *
 * @throws {PaymentError} `invalid_config`: no wallet, unreadable, or permissions too open.
 */
export async function loadWallet(home?: string): Promise<Ed25519Keypair> {
  const paths = walletPaths(home)
  let text: string
  try {
    const info = await stat(paths.wallet)
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      throw new PaymentError(
        'invalid_config',
        `The wallet file ${paths.wallet} is readable by others; run: chmod 600 ${paths.wallet}`,
      )
    }
    text = await readFile(paths.wallet, 'utf8')
  } catch (error) {
    if (error instanceof PaymentError) throw error
    throw new PaymentError(
      'invalid_config',
      `No wallet at ${paths.wallet}; create one with: tollgate wallet new`,
    )
  }
  const parsed = walletSchema.safeParse(safeJson(text))
  if (!parsed.success) {
    throw new PaymentError('invalid_config', `The wallet file ${paths.wallet} is not valid.`)
  }
  return Ed25519Keypair.fromSecretKey(parsed.data.secretKey)
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Reads `settings.json` (empty when absent). */
export async function loadSettings(home?: string): Promise<Settings> {
  const paths = walletPaths(home)
  let text: string
  try {
    text = await readFile(paths.settings, 'utf8')
  } catch {
    return {}
  }
  const parsed = settingsSchema.safeParse(safeJson(text))
  if (!parsed.success) {
    throw new PaymentError('invalid_config', `The settings file ${paths.settings} is not valid.`)
  }
  return parsed.data
}

/** Writes `settings.json` atomically. */
export async function saveSettings(settings: Settings, home?: string): Promise<void> {
  const checked = settingsSchema.parse(settings)
  await writeFileAtomic(walletPaths(home).settings, `${JSON.stringify(checked, null, 2)}\n`)
}

/**
 * Records a local ledger in `settings.json`: its URL becomes the default ledger of every command,
 * and its package ids are what the buyer calls on it.
 */
export async function recordLocalLedger(
  ledger: NonNullable<Settings['localLedger']>,
  home?: string,
): Promise<void> {
  const settings = await loadSettings(home)
  await saveSettings({ ...settings, ledger: ledger.url, localLedger: ledger }, home)
}

/** The wallet limits options that `settings` describe (`"off"` → null). */
export function limitsFrom(settings: Settings, home?: string) {
  const value = (v: string | undefined) => (v === 'off' ? null : v)
  return {
    file: walletPaths(home).spending,
    ...(settings.perTransaction === undefined
      ? {}
      : { perTransaction: value(settings.perTransaction) }),
    ...(settings.perDay === undefined ? {} : { perDay: value(settings.perDay) }),
  }
}
