/**
 * The whole catalog of a gateway as tools: its own endpoints (`catalogTools.ts`), the listed
 * sellers (`sellerTools.ts`) and the inference API's models (`inferenceTools.ts`), with names made
 * unique across the three (a later tool whose name is taken gets `-2`, `-3`, … within 64
 * characters).
 *
 * @module
 */
import { type CatalogTool, loadCatalogTools } from './catalogTools.js'
import { loadInferenceTools } from './inferenceTools.js'
import { loadSellerTools } from './sellerTools.js'

/** Options of {@link loadGatewayTools}. */
export type GatewayToolsOptions = {
  gateway: string
  /** Only sellers paid on this network are kept. */
  network: string
  fetch: (request: Request) => Promise<Response>
  /** The buyer's inference API key: lists the models that need one. Never logged. */
  apiKey?: string | undefined
  /** Names already taken (the server's own tools). */
  reserved?: readonly string[] | undefined
}

/** The catalog's tools, and why a part of it could not be read. */
export type GatewayTools = { tools: CatalogTool[]; warnings: string[] }

/**
 * Renames tools whose name is taken, in order: the first keeps it.
 *
 * @example
 * ```ts
 * uniqueNames([a, b], ['spend_report']) // b renamed `NAME-2` if it had a's name
 * ```
 */
export function uniqueNames(
  tools: readonly CatalogTool[],
  reserved: readonly string[] = [],
): CatalogTool[] {
  const taken = new Set(reserved)
  return tools.map((tool) => {
    let name = tool.name
    for (let n = 2; taken.has(name); n++) {
      const suffix = `-${n}`
      name = `${tool.name.slice(0, 64 - suffix.length)}${suffix}`
    }
    taken.add(name)
    return name === tool.name ? tool : { ...tool, name }
  })
}

/**
 * Reads a gateway's catalog: its own endpoints (required), its listed sellers and its inference
 * models (each optional: a warning when it cannot be read).
 *
 * @throws {PaymentError} `invalid_config` when the gateway's own catalog cannot be read.
 * @example
 * ```ts
 * const { tools, warnings } = await loadGatewayTools({ gateway, network: 'sui:mainnet', fetch })
 * ```
 */
export async function loadGatewayTools(options: GatewayToolsOptions): Promise<GatewayTools> {
  const [own, sellers, inference] = await Promise.all([
    loadCatalogTools(options.gateway, options.fetch),
    loadSellerTools(options.gateway, options.network, options.fetch),
    loadInferenceTools(options.gateway, options.fetch, options.apiKey),
  ])
  return {
    tools: uniqueNames([...own, ...inference.tools, ...sellers.tools], options.reserved),
    warnings: [...sellers.warnings, ...inference.warnings],
  }
}
