/**
 * `tollgate agent show ADDRESS`: an address's agent identity record on the ledger (the
 * `agent_registry` module, the record the listing gate (a) looks for), printed or as JSON. Exit 0
 * when a record is found, 1 when there is none (or it is unreadable), 2 on a usage or ledger error.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { type Command, InvalidArgumentError } from 'commander'
import pc from 'picocolors'
import { lookUpAgent } from 'tollgate/conformance'
import { ledgerOption, messageOf, networkOption } from './options.js'
import { ledgerUrlOf } from './wallet.js'

type ShowOptions = { ledger?: string; network: string; registryPackage?: string; json?: boolean }

function address(value: string): string {
  const normalized = normalizeSuiAddress(value)
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(value) || !isValidSuiAddress(normalized)) {
    throw new InvalidArgumentError('a Sui address (0x + up to 64 hex digits)')
  }
  return normalized
}

/** Adds `agent show` to the `agent` command (`agent register` sits beside it, in agent.ts). */
export function addAgentShow(agent: Command): void {
  agent
    .command('show')
    .description("Show an address's agent identity record (name, metadata URI, registration time)")
    .argument('<address>', 'the agent (wallet) address', address)
    .addOption(ledgerOption())
    .addOption(networkOption())
    .option('--registry-package <address>', 'package of agent_registry (default: the local one)')
    .option('--json', 'print JSON')
    .action(async (owner: string, options: ShowOptions) => {
      let found: Awaited<ReturnType<typeof lookUpAgent>>
      let url: string | undefined
      try {
        url = await ledgerUrlOf(options.ledger, options.network)
        const network = options.network === 'sui:testnet' ? 'testnet' : 'mainnet'
        const client = new SuiGrpcClient({ network, baseUrl: url })
        found = await lookUpAgent(client, {
          address: owner,
          registryPackage: options.registryPackage,
        })
      } catch (error) {
        const why = messageOf(error)
        const message =
          url === undefined
            ? why
            : `The ledger at ${url} did not answer (${why}). Start the local one with tollgate ledger, or pass --ledger <url>.`
        if (options.json)
          console.log(JSON.stringify({ ok: false, error: { code: 'ledger_unavailable', message } }))
        else console.error(`${pc.red(pc.bold('error'))} ledger_unavailable: ${message}`)
        process.exitCode = 2
        return
      }
      if (options.json) {
        console.log(JSON.stringify({ address: owner, ...found }, null, 2))
      } else if (found.status === 'found') {
        const { record } = found
        console.log(`${pc.bold('agent')}         ${record.agent}`)
        console.log(`${pc.bold('name')}          ${record.name}`)
        console.log(`${pc.bold('metadata')}      ${record.metadataUri}`)
        console.log(
          `${pc.bold('registered')}    ${new Date(Number(record.registeredAtMs)).toISOString()}`,
        )
        console.log(`${pc.bold('record')}        ${record.objectId}`)
      } else if (found.status === 'not_found') {
        console.error(`no agent record is owned by ${owner}`)
      } else {
        console.error(`the agent record of ${owner} is unreadable: ${found.reason}`)
      }
      if (found.status !== 'found') process.exitCode = 1
    })
}
