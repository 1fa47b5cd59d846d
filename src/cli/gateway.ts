/**
 * `tollgate gateway`: runs the reference gateway in the foreground. With no configuration it runs on
 * the embedded defaults (SQLite in `.data/gateway`, the local ledger emulator, the local stub
 * upstreams) and says loudly that payments are not real.
 *
 * @module
 */
import { Command, InvalidArgumentError } from 'commander'
import pc from 'picocolors'
import { ConfigError, loadConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server.js'
import { notRealBanner } from './ledger.js'

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
    `${pc.bold('openapi')}      ${u}/openapi.json`,
    `${pc.bold('agents')}       ${u}/llms.txt`,
    `${pc.bold('health')}       ${u}/healthz    ${pc.bold('metrics')} ${u}/metrics`,
    '',
    `${pc.bold('a 402')}        curl -i -X POST ${u}/openai/v1/chat/completions -H 'content-type: application/json' -d '${chat}'`,
    `${pc.bold('pay it')}       npm run demo   (or tollgate/client: createPayingFetch)`,
  ].join('\n')
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
      try {
        const config = loadConfig({
          ...(options.config === undefined ? {} : { file: options.config }),
          ...(options.port === undefined ? {} : { overrides: { port: options.port } }),
        })
        gateway = await startGateway({ config })
      } catch (error) {
        if (error instanceof ConfigError) {
          console.error(pc.red(error.message))
          process.exit(2)
        }
        throw error
      }
      if (gateway.ledger.emulated) console.log(notRealBanner())
      console.log(`${pc.bold('tollgate gateway')} listening on ${gateway.url}`)
      console.log(
        `${pc.bold('ledger')}       ${gateway.ledger.url} (${gateway.ledger.network}${gateway.ledger.emulated ? ', local emulator' : ''})`,
      )
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
