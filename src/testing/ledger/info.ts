/**
 * What a running local ledger says about itself at `GET {url}/health`: that it is the emulator
 * (payments on it are not real), its chain id, the coin it treats as USDC, and the ids of the
 * project's package and escrow config object. A buyer records these with the URL, so that the
 * package it calls comes from its own configuration, never from a seller's 402; a gateway uses it
 * to join a `tollgate ledger` already running on the default port.
 *
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { messageOf } from '../../internal/messageOf.js'

const address = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))

const healthSchema = z.object({
  ok: z.literal(true),
  chainId: z.string().min(1).max(100),
  notice: z.string().max(200).startsWith('LOCAL LEDGER'),
  usdcType: z.string().min(3).max(200),
  modulesPackage: address,
  escrowConfig: address,
  channelRegistry: address.optional(),
})

/** A local ledger as it describes itself (addresses normalised). */
export type LocalLedgerInfo = {
  /** Its base URL, without a trailing slash. */
  url: string
  chainId: string
  /** The coin type it treats as USDC. */
  usdcType: string
  /** The project's package (agent registry, receipt anchor, escrow). */
  modulesPackage: string
  /** The shared `EscrowConfig` object of that package. */
  escrowConfig: string
  /** The shared `Registry` session channels are derived under (absent: an older ledger). */
  channelRegistry?: string | undefined
}

/** The outcome of {@link readLocalLedger}. */
export type LocalLedgerLookup =
  | { status: 'local'; ledger: LocalLedgerInfo }
  /** Something answered, but not as a local ledger does (a full node, another program). */
  | { status: 'other'; reason: string }
  /** Nothing answered in time. */
  | { status: 'unreachable'; reason: string }

/**
 * Asks `url` whether it is a local ledger emulator, and if so for its ids. Bounded: one request,
 * at most `timeoutMs`, at most 4 KiB read.
 *
 * @param url - the ledger's base URL, e.g. `http://127.0.0.1:9123`.
 * @param options.fetch - the fetch to use. Default the global `fetch`.
 * @param options.timeoutMs - how long to wait. Default 3000.
 * @example
 * ```ts
 * const found = await readLocalLedger('http://127.0.0.1:9123')
 * if (found.status === 'local') console.log(found.ledger.modulesPackage)
 * ```
 */
export async function readLocalLedger(
  url: string,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<LocalLedgerLookup> {
  const base = url.replace(/\/+$/, '')
  const doFetch = options.fetch ?? fetch
  let text: string
  try {
    const response = await doFetch(`${base}/health`, {
      signal: AbortSignal.timeout(options.timeoutMs ?? 3_000),
    })
    text = (await response.text()).slice(0, 4096)
    if (!response.ok) return { status: 'other', reason: `GET /health answered ${response.status}` }
  } catch (error) {
    return { status: 'unreachable', reason: messageOf(error) }
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { status: 'other', reason: 'GET /health is not JSON' }
  }
  const parsed = healthSchema.safeParse(json)
  if (!parsed.success) return { status: 'other', reason: 'not a local ledger emulator' }
  const { chainId, usdcType, modulesPackage, escrowConfig, channelRegistry } = parsed.data
  return {
    status: 'local',
    ledger: {
      url: base,
      chainId,
      usdcType,
      modulesPackage,
      escrowConfig,
      ...(channelRegistry === undefined ? {} : { channelRegistry }),
    },
  }
}
