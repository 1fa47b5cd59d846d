/**
 * Gate (a): the seller's agent identity record on the ledger (the `agent_registry` module, see
 * docs/ledger-modules.md). The record's `agent` address is the registered wallet. Registering one
 * ({@link registerAgent}) goes through the same `Ledger` on the local ledger and on a real network.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import type { Ledger } from 'tollgate'
import { isPaymentError, PaymentError } from 'tollgate'
import { z } from 'zod'

/** The default package of the agent registry: the project's package on the local ledger. */
export const defaultRegistryPackage = normalizeSuiAddress('0x70116a7e')

const recordSchema = z.object({
  agent: z.string().regex(/^0x[0-9a-fA-F]{1,64}$/),
  name: z.string().max(1024),
  metadata_uri: z.string().max(1024),
  registered_at_ms: z.string().regex(/^[0-9]{1,20}$/),
})

/** An agent identity record as read from the ledger. */
export type AgentRecord = {
  objectId: string
  /** The registered wallet (normalised). */
  agent: string
  name: string
  metadataUri: string
  registeredAtMs: string
}

/** The outcome of a look-up. */
export type AgentLookup =
  | { status: 'found'; record: AgentRecord }
  | { status: 'not_found' }
  | { status: 'invalid'; reason: string }

/**
 * Looks up the `AgentRecord` owned by `address`: the newest by `registered_at_ms` when the address
 * registered more than once.
 *
 * @param options.registryPackage - package of `agent_registry`; default {@link defaultRegistryPackage}.
 * @throws when the ledger cannot be reached (the caller reports it as an error, not a failure).
 * @example
 * ```ts
 * const found = await lookUpAgent(client, { address })
 * if (found.status === 'found') found.record.agent
 * ```
 */
export async function lookUpAgent(
  client: ClientWithCoreApi,
  options: { address: string; registryPackage?: string | undefined },
): Promise<AgentLookup> {
  const owner = normalizeSuiAddress(options.address)
  const pkg = normalizeSuiAddress(options.registryPackage ?? defaultRegistryPackage)
  const { objects } = await client.core.listOwnedObjects({
    owner,
    type: `${pkg}::agent_registry::AgentRecord`,
    include: { json: true },
    signal: AbortSignal.timeout(15_000),
  })
  if (objects.length === 0) return { status: 'not_found' }
  // On a real network each `register` creates a record (the local ledger updates the one it has):
  // the newest registration is the agent's current identity.
  let newest: AgentRecord | undefined
  for (const object of objects) {
    const parsed = recordSchema.safeParse(object.json)
    if (!parsed.success) continue
    if (newest && BigInt(parsed.data.registered_at_ms) <= BigInt(newest.registeredAtMs)) continue
    newest = {
      objectId: object.objectId,
      agent: normalizeSuiAddress(parsed.data.agent),
      name: parsed.data.name,
      metadataUri: parsed.data.metadata_uri,
      registeredAtMs: parsed.data.registered_at_ms,
    }
  }
  if (newest === undefined) {
    return { status: 'invalid', reason: 'the record does not have the registry fields' }
  }
  return { status: 'found', record: newest }
}

/** Options of {@link registerAgent}. */
export type RegisterAgentOptions = {
  /** The ledger (`createLedger({ url })`): the local emulator or a real network's full node. */
  ledger: Ledger
  /** The agent's key: the record is owned by, and names, its address. Used only to sign. */
  signer: Signer
  /** The agent's name (at most 1024 bytes). */
  name: string
  /** Where the agent's card is (at most 1024 bytes). Default empty. */
  metadataUri?: string | undefined
  /** Package of `agent_registry`. Default {@link defaultRegistryPackage} (the local ledger's). */
  registryPackage?: string | undefined
}

/** The outcome of {@link registerAgent}. */
export type AgentRegistration =
  | { status: 'registered'; agent: string; digest: string; registryPackage: string }
  | { status: 'failed'; error: PaymentError }

/**
 * Registers (or updates) the agent identity record of `signer`'s address: one
 * `agent_registry::register(name, metadata_uri)` call, gas paid by the signer's SUI.
 *
 * @example
 * ```ts
 * const done = await registerAgent({ ledger: createLedger({ url }), signer: keypair, name: 'scout' })
 * if (done.status === 'registered') console.log(done.digest)
 * ```
 */
export async function registerAgent(options: RegisterAgentOptions): Promise<AgentRegistration> {
  const encoder = new TextEncoder()
  const metadataUri = options.metadataUri ?? ''
  for (const [field, value] of [
    ['name', options.name],
    ['metadataUri', metadataUri],
  ] as const) {
    if (encoder.encode(value).length > 1024) {
      return failed('invalid_config', `The agent ${field} is over 1024 bytes.`)
    }
  }
  const pkg = normalizeSuiAddress(options.registryPackage ?? defaultRegistryPackage)
  const agent = options.signer.toSuiAddress()
  let bytes: Uint8Array
  try {
    bytes = await options.ledger.buildMoveCall({
      sender: agent,
      target: `${pkg}::agent_registry::register`,
      arguments: [{ string: options.name }, { string: metadataUri }, { clock: true }],
    })
  } catch (error) {
    if (isPaymentError(error)) return { status: 'failed', error }
    return failed('ledger_unavailable', `The ledger did not answer: ${messageOf(error)}`, error)
  }
  const { signature } = await options.signer.signTransaction(bytes)
  const outcome = await options.ledger.execute(bytes, [signature])
  if (outcome.status === 'rejected') {
    return failed(
      'settlement_failed',
      `The ledger refused the registration: ${outcome.reason.slice(0, 300)}. Is ${pkg} the agent_registry package of this network?`,
    )
  }
  const found =
    outcome.status === 'executed' ? outcome : await options.ledger.waitFor(outcome.digest)
  if (found.status !== 'executed' && found.status !== 'found') {
    return failed('settlement_pending', 'The registration was sent; its outcome is not known yet.')
  }
  if (!found.transaction.success) {
    return failed(
      'transaction_failed',
      `The registration failed on chain: ${(found.transaction.error ?? '').slice(0, 300)}. Is ${pkg} the agent_registry package of this network?`,
    )
  }
  return { status: 'registered', agent, digest: found.transaction.digest, registryPackage: pkg }
}

function failed(
  code:
    | 'invalid_config'
    | 'ledger_unavailable'
    | 'settlement_failed'
    | 'settlement_pending'
    | 'transaction_failed',
  message: string,
  cause?: unknown,
): AgentRegistration {
  return { status: 'failed', error: new PaymentError(code, message, { cause }) }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300)
}
