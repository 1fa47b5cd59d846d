/**
 * Gate (a): the seller's agent identity record on the ledger (the `agent_registry` module, see
 * docs/ledger-modules.md). The record's `agent` address is the registered wallet.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
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
 * Looks up the `AgentRecord` owned by `address`.
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
  const [first] = objects
  if (first === undefined) return { status: 'not_found' }
  const parsed = recordSchema.safeParse(first.json)
  if (!parsed.success)
    return { status: 'invalid', reason: 'the record does not have the registry fields' }
  return {
    status: 'found',
    record: {
      objectId: first.objectId,
      agent: normalizeSuiAddress(parsed.data.agent),
      name: parsed.data.name,
      metadataUri: parsed.data.metadata_uri,
      registeredAtMs: parsed.data.registered_at_ms,
    },
  }
}
