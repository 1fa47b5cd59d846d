/**
 * `tollgate wallet new|address|balance|fund|limits`: the buyer's key and its spending limits. The
 * key lives in `wallet.json` (0600) under the config folder and is never printed.
 *
 * @module
 */
import { Command, Option } from 'commander'
import pc from 'picocolors'
import {
  createLedger,
  formatAmount,
  isPaymentError,
  PaymentError,
  type PaymentErrorCode,
  parseAmount,
} from 'tollgate'
import { createWalletLimits, usdcTypeOf } from 'tollgate/client'
import { nodeFetch } from 'tollgate/node'
import { ledgerOption, messageOf, networkOption } from './options.js'
import {
  createWalletFile,
  limitsFrom,
  loadSettings,
  loadWallet,
  recordLocalLedger,
  type Settings,
  saveSettings,
  walletPaths,
} from './walletFiles.js'

/** The local emulator's default URL (`tollgate ledger`). */
export const localLedgerUrl = 'http://127.0.0.1:9123'

/** Public full nodes by network, for when no ledger URL is configured. */
const publicNodes: Readonly<Record<string, string>> = {
  'sui:mainnet': 'https://fullnode.mainnet.sui.io:443',
  'sui:testnet': 'https://fullnode.testnet.sui.io:443',
}

/** The ledger a command uses, where that choice came from, and what is recorded about it. */
export type ResolvedLedger = {
  url: string
  /** `option`: `--ledger` / `TOLLGATE_LEDGER`; `settings`: `settings.json`; `network`: the public node. */
  source: 'option' | 'settings' | 'network'
  /** What the local ledger at `url` reported (its package ids), when it is the one recorded. */
  local: Settings['localLedger']
}

const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '')

/**
 * The one ledger rule of every command (docs/buyers.md): `--ledger` / `TOLLGATE_LEDGER`, else the
 * ledger recorded in `settings.json` (by `tollgate ledger` or `tollgate wallet fund`), else the
 * public full node of `--network`.
 */
export async function resolveLedger(
  option: string | undefined,
  network: string,
): Promise<ResolvedLedger> {
  const settings = await loadSettings()
  const [url, source]: [string, ResolvedLedger['source']] = option
    ? [option, 'option']
    : settings.ledger
      ? [settings.ledger, 'settings']
      : [publicNodes[network] ?? localLedgerUrl, 'network']
  const recorded = settings.localLedger
  return { url, source, local: recorded && sameUrl(recorded.url, url) ? recorded : undefined }
}

/** The ledger URL by {@link resolveLedger}. */
export async function ledgerUrlOf(option: string | undefined, network: string): Promise<string> {
  return (await resolveLedger(option, network)).url
}

/** The line every command prints first (stdout; not with --json) to say which ledger it uses and why. */
export function ledgerLine(ledger: ResolvedLedger, network: string): string {
  const why =
    ledger.source === 'option'
      ? '--ledger / TOLLGATE_LEDGER'
      : ledger.source === 'settings'
        ? `recorded in ${walletPaths().settings}`
        : `public full node of ${network}`
  const kind = ledger.local ? `local ledger: ${testMoney}` : network
  return `${pc.bold('ledger')} ${ledger.url} (${kind}; ${why})`
}

/** How amounts on the local ledger are labelled: it reports the mainnet chain id. */
const testMoney = 'TEST MONEY, not real'

/** The label after an amount: `(TEST MONEY, not real)` on the local ledger, else nothing. */
export function moneyLabel(ledger: ResolvedLedger): string {
  return ledger.local ? ` ${pc.yellow(`(${testMoney})`)}` : ''
}

/**
 * Codes of a command that could not run as asked (a usage error, no usable answer): exit 1, as any
 * error without a code. Every other code is a refusal (the client, the ledger or a setting): exit 2.
 */
const couldNotRun: ReadonlySet<PaymentErrorCode> = new Set<PaymentErrorCode>([
  'invalid_options',
  'unreachable',
  'bad_url',
  'timeout',
  'too_large',
  'too_many_redirects',
  'aborted',
  'unexpected_status',
])

/**
 * Prints an error as `error CODE: message` (`error error: …` for one without a code) and sets the
 * exit code: 2 for a refusal, 1 for a command that could not run (see `couldNotRun`).
 */
export function fail(error: unknown, json = false): void {
  const code = isPaymentError(error) ? error.code : 'error'
  const message = messageOf(error)
  if (json) {
    console.log(JSON.stringify({ ok: false, error: { code, message } }, null, 2))
  } else {
    console.error(`${pc.red(pc.bold('error'))} ${pc.bold(code)}: ${message}`)
  }
  process.exitCode = isPaymentError(error) && !couldNotRun.has(error.code) ? 2 : 1
}

/**
 * What the local ledger at `url` reports (its package ids), or a one-line error naming the URL
 * tried and the command that starts one.
 */
async function localLedgerAt(url: string): Promise<NonNullable<Settings['localLedger']>> {
  const { readLocalLedger } = await import('tollgate/testing')
  const found = await readLocalLedger(url)
  if (found.status === 'unreachable') {
    throw new PaymentError(
      'unreachable',
      `No local ledger answers at ${url}; start one with: tollgate ledger${url === localLedgerUrl ? '' : ` --port ${new URL(url).port}`}`,
    )
  }
  if (found.status === 'other') {
    throw new PaymentError(
      'invalid_options',
      `${url} is not a local ledger (${found.reason}); its faucet is the local ledger's only (tollgate ledger).`,
    )
  }
  return found.ledger
}

/**
 * A ledger that did not answer, as one line naming the URL tried and, for a loopback URL, the
 * command that starts the local ledger.
 */
function unanswered(url: string, error: unknown): PaymentError {
  if (isPaymentError(error) && error.code !== 'ledger_unavailable') return error
  const loopback = /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(url)
  const port = new URL(url).port
  return new PaymentError(
    'unreachable',
    `The ledger at ${url} did not answer; ${loopback ? `start the local ledger with: tollgate ledger${port === '' || port === '9123' ? '' : ` --port ${port}`}` : 'check --ledger (or TOLLGATE_LEDGER)'}.`,
    { cause: error },
  )
}

/** Builds the `wallet` command. */
export function walletCommand(): Command {
  const wallet = new Command('wallet').description(
    'The buyer wallet: a key in the config folder (0600, never printed) and its spending limits',
  )

  wallet
    .command('new')
    .description('Create a new Ed25519 wallet')
    .option('--force', 'replace an existing wallet (its funds would be lost)')
    .option('--json', 'print JSON')
    .action(async (options: { force?: boolean; json?: boolean }) => {
      try {
        const created = await createWalletFile({ force: options.force ?? false })
        if (options.json) console.log(JSON.stringify(created))
        else {
          console.log(`${pc.bold('address')}  ${created.address}`)
          console.log(`${pc.bold('key file')} ${created.file} ${pc.dim('(0600; keep it secret)')}`)
        }
      } catch (error) {
        fail(error, options.json)
      }
    })

  wallet
    .command('address')
    .description('Print the wallet address')
    .action(async () => {
      try {
        console.log((await loadWallet()).toSuiAddress())
      } catch (error) {
        fail(error)
      }
    })

  wallet
    .command('balance')
    .description('Print the USDC balance (coins and address balance) and SUI for gas')
    .addOption(ledgerOption())
    .addOption(networkOption())
    .option('--json', 'print JSON')
    .action(async (options: { ledger?: string; network: string; json?: boolean }) => {
      try {
        const address = (await loadWallet()).toSuiAddress()
        const resolved = await resolveLedger(options.ledger, options.network)
        if (!options.json) console.log(ledgerLine(resolved, options.network))
        const ledger = createLedger({ url: resolved.url, fetch: nodeFetch })
        const [usdc, sui] = await Promise.all([
          ledger.getBalance(address, usdcTypeOf(options.network) as string),
          ledger.getBalance(address, '0x2::sui::SUI'),
        ]).catch((error: unknown) => {
          throw unanswered(resolved.url, error)
        })
        const out = {
          address,
          ledger: resolved.url,
          testMoney: resolved.local !== undefined,
          usdc: formatAmount(usdc.total),
          usdcAddressBalance: formatAmount(usdc.addressBalance),
          usdcCoins: formatAmount(usdc.coinBalance),
          sui: (Number(sui.total) / 1e9).toFixed(9),
        }
        if (options.json) console.log(JSON.stringify(out, null, 2))
        else {
          console.log(`${pc.bold('address')} ${address}`)
          console.log(
            `${pc.bold('USDC')}    ${out.usdc} ${pc.dim(`(address balance ${out.usdcAddressBalance}, coins ${out.usdcCoins})`)}${moneyLabel(resolved)}`,
          )
          console.log(`${pc.bold('SUI')}     ${out.sui} ${pc.dim('(gas for coin-form payments)')}`)
        }
      } catch (error) {
        fail(error, options.json)
      }
    })

  wallet
    .command('fund')
    .description(
      'Get test USDC and SUI from the local ledger faucet (NOT real money); records the ledger in settings.json',
    )
    .addOption(ledgerOption())
    .option('--usdc <amount>', 'USDC to mint', '10')
    .option('--sui <amount>', 'SUI to mint (gas)', '1')
    .addOption(
      new Option('--into <where>', 'USDC as coins or in the address balance')
        .choices(['coin', 'addressBalance'])
        .default('addressBalance'),
    )
    .action(async (options: { ledger?: string; usdc: string; sui: string; into: string }) => {
      try {
        const address = (await loadWallet()).toSuiAddress()
        // The faucet is the local ledger's: --ledger, else the one recorded, else the default.
        const settings = await loadSettings()
        const base = (options.ledger ?? settings.localLedger?.url ?? localLedgerUrl).replace(
          /\/+$/,
          '',
        )
        const found = await localLedgerAt(base)
        await recordLocalLedger(found)
        console.log(ledgerLine({ url: base, source: 'settings', local: found }, 'sui:mainnet'))
        const url = `${base}/faucet`
        // SUI stays a coin (it pays gas); USDC goes where asked.
        const requests = [
          { address, usdc: options.usdc, sui: '0', into: options.into },
          { address, usdc: '0', sui: options.sui, into: 'coin' },
        ]
        for (const body of requests) {
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
          if (!response.ok) {
            throw new PaymentError(
              'unexpected_status',
              `The faucet at ${url} answered ${response.status}: ${(await response.text()).slice(0, 500)}`,
            )
          }
        }
        console.log(
          `${pc.yellow('test funds, not real money:')} ${options.usdc} USDC and ${options.sui} SUI to ${address}`,
        )
        console.log(
          `${pc.bold('recorded')}  ${base} is now the ledger of every command (${walletPaths().settings})`,
        )
      } catch (error) {
        fail(error)
      }
    })

  wallet
    .command('limits')
    .description('Show or change the spending limits (default 25 USDC per payment, 100 per 24 h)')
    .option('--per-tx <usdc>', 'most one payment may cost, or "off"')
    .option('--per-day <usdc>', 'most all payments may cost over 24 hours, or "off"')
    .option('--json', 'print JSON')
    .action(async (options: { perTx?: string; perDay?: string; json?: boolean }) => {
      try {
        const settings = await loadSettings()
        const check = (v: string) => {
          if (v !== 'off') parseAmount(v)
          return v
        }
        if (options.perTx !== undefined) settings.perTransaction = check(options.perTx)
        if (options.perDay !== undefined) settings.perDay = check(options.perDay)
        if (options.perTx !== undefined || options.perDay !== undefined) {
          await saveSettings(settings)
        }
        const limits = createWalletLimits(limitsFrom(settings))
        const show = (v: bigint | null) => (v === null ? 'off' : formatAmount(v))
        const out = {
          perTransaction: show(limits.perTransaction),
          perDay: show(limits.perDay),
          spentLast24h: formatAmount(await limits.spentToday()),
          settings: walletPaths().settings,
        }
        if (options.json) console.log(JSON.stringify(out, null, 2))
        else {
          console.log(`${pc.bold('per payment')}  ${out.perTransaction} USDC`)
          console.log(`${pc.bold('per 24 hours')} ${out.perDay} USDC`)
          console.log(`${pc.bold('spent (24 h)')} ${out.spentLast24h} USDC`)
        }
      } catch (error) {
        fail(error, options.json)
      }
    })

  return wallet
}
