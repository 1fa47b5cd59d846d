/**
 * `tollgate gateway`: runs the reference gateway in the foreground. With no configuration it runs on
 * the embedded defaults (SQLite in `.data/gateway`, the local ledger emulator, the local stub
 * upstreams) and says loudly that payments are not real.
 *
 * @module
 */
import { Command, InvalidArgumentError } from 'commander'
import pc from 'picocolors'
import { configProblems, loadConfig } from '../../reference-gateway/config.js'
import { testMoneyNotice } from '../../reference-gateway/discovery/testMoney.js'
import {
  gatewayPeers,
  missingPackages,
  missingPeersMessage,
} from '../../reference-gateway/peers.js'
import type { RunningGateway } from '../../reference-gateway/server/server.js'
import { reasonOf } from '../../reference-gateway/startup.js'
import { notRealBanner } from './ledger.js'

/** The local ledger's port (`tollgate ledger`'s default), the gateway's when none is configured. */
const localLedgerPort = 9123

function port(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new InvalidArgumentError('port must be an integer in [0, 65535]')
  }
  return n
}

/** What to try against a running gateway (printed at start). */
export function tryThis(gateway: RunningGateway): string {
  const u = gateway.publicBaseUrl
  const chat = JSON.stringify({ messages: [{ role: 'user', content: 'Say hello' }] })
  return [
    `${pc.bold('catalog')}      ${u}/            (open in a browser)`,
    `${pc.bold('console')}      ${u}/console     (API keys: sign in with a Sui wallet)`,
    `${pc.bold('openapi')}      ${u}/openapi.json`,
    `${pc.bold('agents')}       ${u}/llms.txt`,
    `${pc.bold('health')}       ${u}/healthz    ${pc.bold('metrics')} ${u}/metrics`,
    '',
    `${pc.bold('a 402')}        curl -i -X POST ${u}/openai/v1/chat/completions -H 'content-type: application/json' -d '${chat}'`,
    ...payLines(gateway),
  ].join('\n')
}

/** How to pay this gateway: on the emulator, a wallet, test USDC and a `tollgate pay` line. */
function payLines(gateway: RunningGateway): string[] {
  if (!gateway.ledger.emulated) {
    return [
      `${pc.bold('pay it')}       tollgate pay POST <endpoint> -d '<body>'   (or tollgate/client)`,
    ]
  }
  const notice = testMoneyNotice(gateway.catalog, {
    publicBaseUrl: gateway.publicBaseUrl,
    ledgerUrl: gateway.ledger.url,
  })
  return [
    '',
    pc.yellow(notice.headline),
    ...notice.commands.map(
      (command, index) => `${pc.bold((index === 0 ? 'pay it' : '').padEnd(12))} ${command}`,
    ),
  ]
}

/** Builds the `gateway` sub-command. */
export function gatewayCommand(): Command {
  return new Command('gateway')
    .description(
      'Run the reference gateway: the paid catalog over upstream APIs. With no configuration: SQLite, the local ledger emulator and stub upstreams (payments NOT real).',
    )
    .option('-p, --port <port>', 'port (also PORT; default 4020)', port)
    .option('-c, --config <file>', 'JSON settings file (also TOLLGATE_GATEWAY_CONFIG)')
    .action(async (options: { port?: number; config?: string }) => {
      let gateway: RunningGateway
      let warning: string | undefined
      try {
        const loaded = loadConfig({
          ...(options.config === undefined ? {} : { file: options.config }),
          ...(options.port === undefined ? {} : { overrides: { port: options.port } }),
        })
        // One local ledger: the gateway's is the one `tollgate ledger` and the wallet use (9123).
        const config =
          loaded.ledgerUrl === undefined && loaded.emulatorPort === undefined
            ? { ...loaded, emulatorPort: localLedgerPort }
            : loaded
        // The gateway's packages are optional peers: name the missing ones before loading it.
        const missing = await missingPackages(gatewayPeers(config))
        if (missing.length > 0) {
          console.error(pc.red(missingPeersMessage(missing)))
          process.exit(2)
        }
        const { privateProbesWarning, startGateway } = await import(
          '../../reference-gateway/server/server.js'
        )
        gateway = await startGateway({ config })
        warning = privateProbesWarning(config)
      } catch (error) {
        // One line, naming the setting and the cause; exit 2 for a setting to fix.
        const problems = configProblems(error)
        if (problems !== undefined) {
          console.error(pc.red(`tollgate gateway: ${problems.join('; ')}`))
          process.exit(2)
        }
        console.error(pc.red(`tollgate gateway: could not start: ${reasonOf(error)}`))
        process.exit(1)
      }
      if (gateway.ledger.emulated) console.log(notRealBanner())
      if (warning !== undefined) console.error(pc.bold(pc.red(`WARNING: ${warning}`)))
      console.log(`${pc.bold('tollgate gateway')} listening on ${gateway.url}`)
      console.log(
        `${pc.bold('ledger')}       ${gateway.ledger.url} (${gateway.ledger.network}${gateway.ledger.emulated ? ', local emulator' : ''})`,
      )
      const local = gateway.ledger.local
      if (local !== undefined) {
        const say = local.mode === 'moved' ? pc.yellow(local.note) : local.note
        console.log(`${''.padEnd(13)}${say}`)
      }
      console.log(`${pc.bold('pay to')}       ${gateway.payTo}`)
      console.log(
        `${pc.bold('store')}        ${gateway.store}   ${pc.bold('upstreams')} ${gateway.upstreams === 'stub' ? 'local stubs (canned answers)' : 'provider APIs'}`,
      )
      console.log('')
      console.log(tryThis(gateway))
      const stop = async () => {
        console.log('stopping: finishing in-flight paid calls…')
        await gateway.stop()
        process.exit(0)
      }
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
}
