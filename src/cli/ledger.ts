/**
 * `tollgate ledger`: runs the local Sui ledger emulator in the foreground.
 *
 * @module
 */
import { Command, InvalidArgumentError } from 'commander'
import pc from 'picocolors'
import { startLedger } from 'tollgate/testing'
import { messageOf } from './options.js'
import { recordLocalLedger, walletPaths } from './walletFiles.js'

function integer(name: string, min: number, max: number) {
  return (value: string) => {
    const n = Number(value)
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}]`)
    return n
  }
}

/** The banner every program started against the local ledger shows. */
export function notRealBanner(): string {
  const width = 78
  const row = (text: string) => pc.bgRed(pc.white(pc.bold(`!!  ${text}`.padEnd(width - 2) + '!!')))
  const edge = pc.bgRed(pc.white(pc.bold('!'.repeat(width))))
  return [
    edge,
    row('LOCAL SUI LEDGER EMULATOR: PAYMENTS ON IT ARE NOT REAL MONEY'),
    row('It uses the mainnet chain id and USDC type only so code runs as-is.'),
    edge,
  ].join('\n')
}

/**
 * One line saying why the ledger could not start and what to do, for a port that is busy or not
 * allowed; `undefined` for anything else.
 */
function startProblem(error: unknown, port: number): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  const where = `127.0.0.1:${port}`
  switch (code) {
    case 'EADDRINUSE':
      return `${where} is already in use (EADDRINUSE): a ledger may already run there (use it), or start this one elsewhere with --port <port> (0 for any free port)`
    case 'EACCES':
      return `not allowed to listen on ${where} (EACCES): use a port above 1023 (--port)`
    default:
      return undefined
  }
}

/** Builds the `ledger` sub-command. */
export function ledgerCommand(): Command {
  return new Command('ledger')
    .description(
      'Run a local Sui ledger emulator (gRPC-web) with a faucet. Payments on it are NOT real.',
    )
    .option(
      '-p, --port <port>',
      'port on 127.0.0.1 (0 = any free port)',
      integer('port', 0, 65_535),
      9123,
    )
    .option(
      '--latency-ms <ms>',
      'settlement latency per execution',
      integer('latency', 0, 60_000),
      400,
    )
    .option('--state <file>', 'snapshot file: load at start, save after every change')
    .option('--seed <seed>', 'seed for deterministic object ids')
    .option(
      '--epoch-ms <ms>',
      'advance the epoch every N ms',
      integer('epoch-ms', 1_000, 2_147_483_647),
    )
    .action(
      async (options: {
        port: number
        latencyMs: number
        state?: string
        seed?: string
        epochMs?: number
      }) => {
        let ledger: Awaited<ReturnType<typeof startLedger>>
        try {
          ledger = await startLedger({
            port: options.port,
            latencyMs: options.latencyMs,
            ...(options.state ? { stateFile: options.state } : {}),
            ...(options.seed ? { seed: options.seed } : {}),
            ...(options.epochMs ? { epochDurationMs: options.epochMs } : {}),
          })
        } catch (error) {
          const problem = startProblem(error, options.port)
          if (problem === undefined) throw error
          console.error(pc.red(`tollgate ledger: ${problem}`))
          process.exit(2)
        }
        console.log(notRealBanner())
        console.log(`${pc.bold('url')}         ${ledger.url}`)
        console.log(`${pc.bold('chain id')}    ${ledger.chainId}`)
        console.log(`${pc.bold('usdc type')}   ${ledger.usdcType}`)
        console.log(`${pc.bold('modules')}     ${ledger.modulesPackage}`)
        console.log(
          `${pc.bold('faucet')}      curl -X POST ${ledger.url}/faucet -H 'content-type: application/json' -d '{"address":"0x…","usdc":"10","sui":"1"}'`,
        )
        console.log(`${pc.bold('state')}       ${options.state ?? '(in memory; lost on exit)'}`)
        console.log(`${pc.bold('latency')}     ${options.latencyMs} ms per execution`)
        // The wallet's commands use this ledger from now on, and call the packages it reports.
        try {
          await recordLocalLedger({
            url: ledger.url,
            chainId: ledger.chainId,
            usdcType: ledger.usdcType,
            modulesPackage: ledger.modulesPackage,
            escrowConfig: ledger.escrow.config,
          })
          console.log(
            `${pc.bold('recorded')}    in ${walletPaths().settings}: tollgate wallet, pay, job and agent use this ledger`,
          )
        } catch (error) {
          console.log(
            `${pc.yellow('not recorded')} ${walletPaths().settings}: ${messageOf(error)} (pass --ledger ${ledger.url} to each command)`,
          )
        }
        const stop = async () => {
          await ledger.stop()
          process.exit(0)
        }
        process.once('SIGINT', stop)
        process.once('SIGTERM', stop)
      },
    )
}
