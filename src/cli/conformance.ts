/**
 * `tollgate conformance URL`: probes a seller endpoint against the four listing gates and the
 * protocol rules. Exit 0 when all four gates pass, 1 when a gate fails (or, with `--strict`, any
 * check fails) and on a usage error (as every `tollgate` command), 2 when the probe could not be
 * made (no answer, a refused address).
 *
 * @module
 */
import { writeFileSync } from 'node:fs'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Command, InvalidArgumentError, Option } from 'commander'
import pc from 'picocolors'
import { hasCode, isPaymentError, PaymentError, parseAmount } from 'tollgate'
import type { ConformanceReport } from 'tollgate/conformance'
import {
  formatSummary,
  runConformance,
  terminalProgress,
  toJson,
  toJUnit,
} from 'tollgate/conformance'
import { createTestWallet } from 'tollgate/testing'

/** The default ledger: Sui mainnet's public full node. */
export const defaultLedgerUrl = 'https://fullnode.mainnet.sui.io:443'

/** Environment variable holding a `suiprivkey…` test wallet key for `--mode paid`. */
export const walletKeyVariable = 'TOLLGATE_CONFORMANCE_WALLET_KEY'

type Options = {
  agent?: string
  walletAddress?: string
  method: string
  body?: string
  mode: 'read-only' | 'paid'
  ledger: string
  json?: boolean
  junit?: string
  allowPrivateNetwork?: boolean
  network: string
  timeout: number
  faucet?: boolean
  registryPackage?: string
  sessionPackage?: string
  sessionRegistry?: string
  maxSessionDeposit?: bigint
  strict?: boolean
}

function positive(name: string) {
  return (value: string) => {
    const n = Number(value)
    if (!Number.isInteger(n) || n <= 0)
      throw new InvalidArgumentError(`${name} must be a positive integer`)
    return n
  }
}

function usdc(name: string) {
  return (value: string) => {
    try {
      return parseAmount(value)
    } catch {
      throw new InvalidArgumentError(`${name} must be a USDC amount, e.g. 0.5`)
    }
  }
}

/** The exit code of a report: 0 all gates pass, 1 a gate fails, 2 the probe could not be made. */
export function exitCodeOf(report: ConformanceReport, strict = false): 0 | 1 | 2 {
  if (report.gates.b === 'error') return 2
  if (!report.listable) return 1
  if (strict && report.checks.some((c) => c.status === 'fail' || c.status === 'error')) return 1
  return 0
}

async function walletFor(options: Options): Promise<Ed25519Keypair | undefined> {
  if (options.mode !== 'paid') return undefined
  const key = process.env[walletKeyVariable]
  if (key !== undefined && key !== '') {
    try {
      return Ed25519Keypair.fromSecretKey(key)
    } catch {
      throw new PaymentError('invalid_config', `${walletKeyVariable} is not an Ed25519 suiprivkey`)
    }
  }
  if (options.faucet) {
    const funded = await createTestWallet({ url: options.ledger, usdc: '20', sui: '1' })
    return funded.keypair
  }
  throw new PaymentError(
    'invalid_options',
    `paid mode needs a funded test wallet: set ${walletKeyVariable}, or pass --faucet with a local --ledger`,
  )
}

/** Builds the `conformance` sub-command. */
export function conformanceCommand(): Command {
  return new Command('conformance')
    .description('Probe a seller endpoint against the four listing gates and the x402/MPP rules.')
    .argument('<url>', 'the paid endpoint to probe')
    .option('--agent <address>', 'the seller agent identity to look up on the ledger (gate a)')
    .option(
      '--wallet-address <address>',
      'the registered wallet, when there is no agent record (gate a then fails)',
    )
    .option('--method <method>', 'HTTP method of the probe', 'POST')
    .option('--body <json>', 'JSON request body of the probe (default {})')
    .addOption(
      new Option('--mode <mode>', 'read-only (safe against production) or paid (test ledger only)')
        .choices(['read-only', 'paid'])
        .default('read-only'),
    )
    .option('--ledger <url>', 'ledger full-node gRPC URL', defaultLedgerUrl)
    .option('--network <network>', 'network challenges must pay on', 'sui:mainnet')
    .option('--json', 'print the report as JSON on stdout (progress goes to stderr)')
    .option('--junit <file>', 'write a JUnit XML report to this file')
    .option('--allow-private-network', 'allow probing loopback/private addresses (local tests)')
    .option('--timeout <ms>', 'per-request timeout in ms', positive('timeout'), 15_000)
    .option('--faucet', 'paid mode: fund a throwaway wallet from the local ledger faucet')
    .option(
      '--registry-package <address>',
      'package of agent_registry (default: the local ledger one)',
    )
    .option(
      '--session-package <address>',
      'paid mode: the session channel package the payer trusts (default: the local ledger one)',
    )
    .option('--session-registry <address>', 'paid mode: the registry of --session-package')
    .option(
      '--max-session-deposit <usdc>',
      'paid mode: most the channel the session checks open may hold (default 1)',
      usdc('--max-session-deposit'),
    )
    .option('--strict', 'exit 1 when any check fails, not only a gate')
    .action(async (url: string, options: Options) => {
      const write = (text: string) => process.stderr.write(text)
      if ((options.sessionPackage === undefined) !== (options.sessionRegistry === undefined)) {
        write(
          `${pc.red('error')} invalid_options: give --session-package and --session-registry together\n`,
        )
        process.exitCode = 1
        return
      }
      if (!URL.canParse(url)) {
        write(
          `${pc.red('error')} invalid_options: ${url} is not a URL: give the endpoint's full URL (https://seller.example/v1/answer)\n`,
        )
        process.exitCode = 1
        return
      }
      let body: unknown
      if (options.body !== undefined) {
        try {
          body = JSON.parse(options.body)
        } catch {
          write(
            `${pc.red('error')} invalid_options: --body is not JSON: give it as '{"key":"value"}'\n`,
          )
          process.exitCode = 1
          return
        }
      }
      let report: ConformanceReport
      try {
        const wallet = await walletFor(options)
        write(`${pc.bold('tollgate conformance')} ${options.method} ${url} (${options.mode})\n`)
        report = await runConformance({
          url,
          method: options.method,
          body,
          agent: options.agent,
          walletAddress: options.walletAddress,
          ledger: options.ledger,
          wallet,
          mode: options.mode,
          timeoutMs: options.timeout,
          allowPrivateNetwork: options.allowPrivateNetwork === true,
          network: options.network,
          registryPackage: options.registryPackage,
          sessionChannels:
            options.sessionPackage === undefined || options.sessionRegistry === undefined
              ? undefined
              : { package: options.sessionPackage, registry: options.sessionRegistry },
          maxSessionDeposit: options.maxSessionDeposit,
          onProgress: terminalProgress(write),
        })
      } catch (error) {
        // A usage error exits 1, as in every tollgate command; a probe that could not be made, 2.
        const usage = hasCode(error, 'invalid_options') || hasCode(error, 'bad_url')
        const code = isPaymentError(error) ? `${error.code}: ` : ''
        write(`${pc.red('error')} ${code}${(error as Error).message}\n`)
        process.exitCode = usage ? 1 : 2
        return
      }
      write(formatSummary(report))
      if (options.json) process.stdout.write(toJson(report))
      if (options.junit !== undefined) writeFileSync(options.junit, toJUnit(report))
      process.exitCode = exitCodeOf(report, options.strict === true)
    })
}
