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
import {
  createWalletFile,
  limitsFrom,
  loadSettings,
  loadWallet,
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

/** The ledger URL: `--ledger` / `TOLLGATE_LEDGER`, else settings, else the network's full node. */
export async function ledgerUrlOf(option: string | undefined, network: string): Promise<string> {
  if (option) return option
  const settings = await loadSettings()
  return settings.ledger ?? publicNodes[network] ?? localLedgerUrl
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
  const message = error instanceof Error ? error.message : String(error)
  if (json) {
    console.log(JSON.stringify({ ok: false, error: { code, message } }, null, 2))
  } else {
    console.error(`${pc.red(pc.bold('error'))} ${pc.bold(code)}: ${message}`)
  }
  process.exitCode = isPaymentError(error) && !couldNotRun.has(error.code) ? 2 : 1
}

const ledgerOption = () =>
  new Option('--ledger <url>', 'ledger gRPC URL (the emulator: tollgate ledger)').env(
    'TOLLGATE_LEDGER',
  )
const networkOption = () =>
  new Option('--network <network>', 'network')
    .default('sui:mainnet')
    .choices(Object.keys(publicNodes))

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
        const ledger = createLedger({
          url: await ledgerUrlOf(options.ledger, options.network),
          fetch: nodeFetch,
        })
        const usdc = await ledger.getBalance(address, usdcTypeOf(options.network) as string)
        const sui = await ledger.getBalance(address, '0x2::sui::SUI')
        const out = {
          address,
          usdc: formatAmount(usdc.total),
          usdcAddressBalance: formatAmount(usdc.addressBalance),
          usdcCoins: formatAmount(usdc.coinBalance),
          sui: (Number(sui.total) / 1e9).toFixed(9),
        }
        if (options.json) console.log(JSON.stringify(out, null, 2))
        else {
          console.log(`${pc.bold('address')} ${address}`)
          console.log(
            `${pc.bold('USDC')}    ${out.usdc} ${pc.dim(`(address balance ${out.usdcAddressBalance}, coins ${out.usdcCoins})`)}`,
          )
          console.log(`${pc.bold('SUI')}     ${out.sui} ${pc.dim('(gas for coin-form payments)')}`)
        }
      } catch (error) {
        fail(error, options.json)
      }
    })

  wallet
    .command('fund')
    .description('Get test USDC and SUI from the local emulator faucet (NOT real money)')
    .addOption(ledgerOption().default(localLedgerUrl))
    .option('--usdc <amount>', 'USDC to mint', '10')
    .option('--sui <amount>', 'SUI to mint (gas)', '1')
    .addOption(
      new Option('--into <where>', 'USDC as coins or in the address balance')
        .choices(['coin', 'addressBalance'])
        .default('addressBalance'),
    )
    .action(async (options: { ledger: string; usdc: string; sui: string; into: string }) => {
      try {
        const address = (await loadWallet()).toSuiAddress()
        const url = `${options.ledger.replace(/\/$/, '')}/faucet`
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
