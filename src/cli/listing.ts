/**
 * `tollgate listing submit|status|delist`: a seller's endpoints in a gateway's catalog, signed with
 * the agent's key (`TOLLGATE_AGENT_KEY`, else the wallet's — as `tollgate agent register`):
 *
 * ```
 * tollgate listing submit URL --name NAME [--method POST] [--body JSON] [--description TEXT] [--tag T]… [--input-schema FILE]
 * tollgate listing status [ADDRESS]
 * tollgate listing delist LISTING_ID
 * ```
 *
 * A submission prepares a nonce (`POST /v1/agent/endpoint/prepare`), signs the message as a Sui
 * personal message and submits it: the gateway runs the four listing gates. The message signed is
 * built here from the nonce and the body this command sends; a gateway that asks for anything
 * else to be signed is refused (`terms_mismatch`) and nothing is signed. A refusal prints the
 * gateway's reason (the failed gates and their checks) and exits 1.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import type { Signer } from '@mysten/sui/cryptography'
import { Command, Option } from 'commander'
import pc from 'picocolors'
import { formatAmount, PaymentError } from 'tollgate'
import { z } from 'zod'
import { bodySha256, mutationMessage } from '../../reference-gateway/marketplace/signing.js'
import { agentSigner } from './agent.js'
import { fail } from './wallet.js'

type Common = { gateway: string; json?: boolean }

/** A gateway's answer: a JSON object (its members are read one by one, each checked). */
const jsonObjectSchema = z.record(z.string(), z.unknown())

/** An answer of the gateway that is not a success: printed as it came, exit code 1. */
class GatewayRefusal extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    const nested = body.error as { code?: string; message?: string } | undefined
    const code = (body.code as string | undefined) ?? nested?.code ?? `http_${status}`
    const detail = (body.detail as string | undefined) ?? nested?.message ?? ''
    super(`${code}: ${detail}`)
  }
}

const gatewayOption = () =>
  new Option('--gateway <url>', 'the gateway whose catalog lists the endpoint')
    .env('TOLLGATE_GATEWAY')
    .default('http://127.0.0.1:4020')

async function call(
  gateway: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const url = `${gateway.replace(/\/+$/, '')}${path}`
  let response: Response
  try {
    response = await fetch(
      url,
      body === undefined
        ? {}
        : {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          },
    )
  } catch (error) {
    throw new PaymentError(
      'unreachable',
      `The gateway at ${gateway} did not answer (${(error as Error).message}).`,
      {
        cause: error,
      },
    )
  }
  const text = await response.text()
  let json: Record<string, unknown>
  try {
    json = jsonObjectSchema.parse(JSON.parse(text))
  } catch {
    throw new PaymentError(
      'unexpected_status',
      `The gateway answered ${response.status} with a body that is not a JSON object.`,
    )
  }
  if (!response.ok) throw new GatewayRefusal(response.status, json)
  return json
}

/** Prepares a nonce for `action` over `body`, signs its message and sends it to `path`. */
async function signed(
  gateway: string,
  signer: Signer,
  action: 'submit' | 'service',
  body: Record<string, unknown>,
  path: string,
): Promise<Record<string, unknown>> {
  const address = signer.toSuiAddress()
  const prepared = await call(gateway, '/v1/agent/endpoint/prepare', { address, action, body })
  // Sign only what this command means: the nonce over the hash of the body it sends.
  const nonce = typeof prepared.nonce === 'string' ? prepared.nonce : ''
  const expected = mutationMessage(nonce, bodySha256(body))
  if (!/^[0-9a-f]{32}$/.test(nonce) || prepared.message !== expected) {
    throw new PaymentError(
      'terms_mismatch',
      `The gateway at ${gateway} asked to sign a message that is not this ${action} (another body, or not a catalog mutation); nothing was signed.`,
    )
  }
  const { signature } = await signer.signPersonalMessage(new TextEncoder().encode(expected))
  return call(gateway, path, { address, nonce, signature, body })
}

function refused(error: unknown, json: boolean | undefined): void {
  if (!(error instanceof GatewayRefusal)) {
    fail(error, json)
    return
  }
  if (json) {
    console.log(JSON.stringify({ ok: false, status: error.status, ...error.body }, null, 2))
  } else {
    console.error(`${pc.red(pc.bold('refused'))} ${error.message}`)
    const failures = error.body.failures as
      | { gate: string; checks: { title: string; message: string; hint?: string }[] }[]
      | undefined
    for (const failure of failures ?? []) {
      for (const check of failure.checks) {
        console.error(`  gate ${failure.gate}  ${check.title}: ${check.message}`)
        if (check.hint) console.error(`          ${pc.dim(check.hint)}`)
      }
    }
    for (const gate of (error.body.notJudged as string[] | undefined) ?? []) {
      console.error(`  gate ${gate}  not judged (an earlier gate failed)`)
    }
    if (typeof error.body.reason === 'string') console.error(`  reason ${error.body.reason}`)
  }
  process.exitCode = 1
}

/** A price as the gateway sends it (base units), in USDC as users read it. */
function usdcText(price: unknown): string {
  return typeof price === 'string' && /^[0-9]{1,30}$/.test(price)
    ? `${formatAmount(BigInt(price))} USDC`
    : `${String(price)} (base units)`
}

const listingLine = (l: Record<string, unknown>) =>
  `${pc.bold(String(l.id))}  ${String(l.state).padEnd(9)} ${l.method} ${l.url}  ${usdcText(l.price)}  ${l.name}`

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

type SubmitOptions = Common & {
  name: string
  method: string
  body?: string
  probeBody?: string
  description?: string
  tag: string[]
  inputSchema?: string
}

/** Builds the `listing` command. */
export function listingCommand(): Command {
  const listing = new Command('listing').description(
    "A seller's endpoints in a gateway's catalog: submit, status, delist (signed with the agent's key)",
  )
  listing
    .command('submit')
    .description('Submit an endpoint: the gateway runs the four listing gates and lists it')
    .argument('<url>', 'the paid endpoint')
    .requiredOption('--name <name>', 'the name shown in the catalog')
    .option('--method <method>', 'the HTTP method', 'POST')
    .option('--body <json>', 'the JSON body the probes send, as conformance --body (default {})')
    // The same option under its first name.
    .addOption(new Option('--probe-body <json>').hideHelp())
    .option('--description <text>', 'what the endpoint does')
    .option('--tag <tag>', 'a tag (repeat for more)', (value, all: string[]) => [...all, value], [])
    .option('--input-schema <file>', 'a JSON Schema file of the request body (shown to agents)')
    .addOption(gatewayOption())
    .option('--json', 'print JSON')
    .action(async (url: string, options: SubmitOptions) => {
      try {
        const probeBody = options.body ?? options.probeBody
        if (probeBody !== undefined && !isJson(probeBody)) {
          throw new PaymentError(
            'invalid_options',
            `--body is not JSON: give it as '{"key":"value"}'`,
          )
        }
        const body: Record<string, unknown> = {
          url,
          name: options.name,
          method: options.method.toUpperCase(),
          ...(probeBody === undefined ? {} : { probeBody }),
          ...(options.description === undefined ? {} : { description: options.description }),
          ...(options.tag.length === 0 ? {} : { tags: options.tag }),
        }
        if (options.inputSchema !== undefined) {
          try {
            body.inputSchema = JSON.parse(await readFile(options.inputSchema, 'utf8'))
          } catch (error) {
            throw new PaymentError(
              'invalid_options',
              `--input-schema: ${(error as Error).message}`,
              { cause: error },
            )
          }
        }
        const listed = await signed(
          options.gateway,
          await agentSigner(),
          'submit',
          body,
          '/v1/agent/endpoint/submit',
        )
        if (options.json) {
          console.log(JSON.stringify({ ok: true, listing: listed }, null, 2))
          return
        }
        console.log(`${pc.green(pc.bold('listed'))}  ${listingLine(listed)}`)
        console.log(`${pc.bold('check it')}  tollgate listing status --gateway ${options.gateway}`)
      } catch (error) {
        refused(error, options.json)
      }
    })
  listing
    .command('status')
    .description("An address's endpoints in the catalog, their states and newest probes")
    .argument('[address]', "the seller's agent address (default: the agent key's)")
    .addOption(gatewayOption())
    .option('--json', 'print JSON')
    .action(async (address: string | undefined, options: Common) => {
      try {
        const who = address ?? (await agentSigner()).toSuiAddress()
        const profile = await call(options.gateway, `/v1/agent/${encodeURIComponent(who)}`)
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...profile }, null, 2))
          return
        }
        const identity = profile.identity as { status: string; name?: string }
        console.log(
          `${pc.bold('agent')}     ${profile.address} (${identity.status === 'found' ? `registered as ${identity.name}` : identity.status})`,
        )
        const endpoints = profile.endpoints as (Record<string, unknown> & {
          probes: { probedAt: string; passed: boolean; message: string }[]
        })[]
        if (endpoints.length === 0) console.log('no endpoints listed')
        for (const endpoint of endpoints) {
          console.log(listingLine(endpoint))
          const last = endpoint.probes[0]
          if (last !== undefined) {
            console.log(
              `  last probe ${last.probedAt}: ${last.passed ? pc.green('passed') : pc.red('failed')} (${last.message})`,
            )
          }
        }
      } catch (error) {
        refused(error, options.json)
      }
    })
  listing
    .command('delist')
    .description('Withdraw a listed endpoint from the catalog')
    .argument('<listing-id>', 'the listing (lst_…), as `tollgate listing status` shows it')
    .addOption(gatewayOption())
    .option('--json', 'print JSON')
    .action(async (listingId: string, options: Common) => {
      try {
        const after = await signed(
          options.gateway,
          await agentSigner(),
          'service',
          { op: 'delist', listingId },
          '/v1/agent/service',
        )
        if (options.json) {
          console.log(JSON.stringify({ ok: true, listing: after }, null, 2))
          return
        }
        console.log(`${pc.bold('delisted')}  ${listingLine(after)}`)
      } catch (error) {
        refused(error, options.json)
      }
    })
  return listing
}
