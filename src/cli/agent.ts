/**
 * `tollgate agent register --name NAME`: registers the seller's agent identity record (gate (a) of
 * `tollgate conformance`) on the ledger: the local emulator, or a real network's full node with
 * `--registry-package`. The key is `TOLLGATE_AGENT_KEY` (a `suiprivkey…`) or the wallet in the
 * config folder; it signs and pays the gas, and is never printed.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { Command } from 'commander'
import pc from 'picocolors'
import { createLedger, hasCode, PaymentError, signerFromSecretKey } from 'tollgate'
import { defaultRegistryPackage, registerAgent } from 'tollgate/conformance'
import { addAgentShow } from './agentShow.js'
import { ledgerOption, networkOption } from './options.js'
import { fail, ledgerLine, resolveLedger } from './wallet.js'
import { loadWallet } from './walletFiles.js'

/** Environment variable holding the agent's key, when it is not the config folder's wallet. */
export const agentKeyVariable = 'TOLLGATE_AGENT_KEY'

type RegisterOptions = {
  name: string
  metadataUri?: string
  ledger?: string
  network: string
  registryPackage?: string
  json?: boolean
}

function signerFromKey(key: string): Signer {
  const read = signerFromSecretKey(key)
  if (read.status === 'valid') return read.signer
  throw new PaymentError(
    'invalid_options',
    read.reason === 'malformed'
      ? `${agentKeyVariable} is not a Sui private key (suiprivkey1…).`
      : `${agentKeyVariable}: the ${read.scheme} scheme cannot sign here.`,
  )
}

/**
 * The agent's signer: the key in `TOLLGATE_AGENT_KEY` when set, else the wallet's (`tollgate agent`
 * and `tollgate listing` sign with it).
 */
export async function agentSigner(): Promise<Signer> {
  const key = process.env[agentKeyVariable]
  return key !== undefined && key !== '' ? signerFromKey(key) : await loadWallet()
}

/**
 * The failures a new seller meets first, said with the ledger they happened on and what to do: no
 * ledger there, or no SUI to pay the gas. Others pass through.
 */
function withWhatToDo(error: unknown, url: string, address: string): unknown {
  if (hasCode(error, 'ledger_unavailable')) {
    return new PaymentError(
      'ledger_unavailable',
      `The ledger at ${url} did not answer (${error.message.replace(/^The ledger did not answer: /, '')}). Start the local one with tollgate ledger, or pass --ledger <url>.`,
      { cause: error },
    )
  }
  if (hasCode(error, 'INSUFFICIENT_BALANCE')) {
    return new PaymentError(
      'INSUFFICIENT_BALANCE',
      `${address} has not enough SUI on ${url} to pay the gas (${error.message}). Fund it first: tollgate wallet fund (the local ledger's faucet), or send it SUI.`,
      { cause: error },
    )
  }
  return error
}

/** Builds the `agent` command. */
export function agentCommand(): Command {
  const agent = new Command('agent').description(
    "The seller's agent identity record on the ledger (gate (a) of tollgate conformance)",
  )
  agent
    .command('register')
    .description(
      `Register (or update) the agent record of ${agentKeyVariable}'s address, or of the wallet's`,
    )
    .requiredOption('--name <name>', "the agent's name")
    .option('--metadata-uri <uri>', "where the agent's card is", '')
    .addOption(ledgerOption())
    .addOption(networkOption())
    .option(
      '--registry-package <address>',
      `package of agent_registry (default: the one the local ledger reported, in settings.json; else ${defaultRegistryPackage})`,
    )
    .option('--json', 'print JSON')
    .action(async (options: RegisterOptions) => {
      try {
        const signer = await agentSigner()
        const resolved = await resolveLedger(options.ledger, options.network)
        if (!options.json) console.log(ledgerLine(resolved, options.network))
        const url = resolved.url
        // The package called is the user's: --registry-package, else the recorded local ledger's.
        const done = await registerAgent({
          ledger: createLedger({ url }),
          signer,
          name: options.name,
          metadataUri: options.metadataUri,
          registryPackage: options.registryPackage ?? resolved.local?.modulesPackage,
        }).catch((error: unknown) => ({ status: 'failed' as const, error }))
        if (done.status === 'failed') throw withWhatToDo(done.error, url, signer.toSuiAddress())
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...done, ledger: url }))
          return
        }
        console.log(`${pc.bold('agent')}      ${done.agent} registered as ${options.name}`)
        console.log(`${pc.bold('digest')}     ${done.digest}`)
        console.log(`${pc.bold('registry')}   ${done.registryPackage}::agent_registry on ${url}`)
        console.log(
          `${pc.bold('check it')}   tollgate conformance <url> --agent ${done.agent} --ledger ${url} --registry-package ${done.registryPackage}`,
        )
      } catch (error) {
        fail(error, options.json)
      }
    })
  addAgentShow(agent)
  return agent
}
