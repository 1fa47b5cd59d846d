/**
 * Escrowed jobs as the gateway starts them: on the local ledger's package, or on a configured
 * package and config object (both or neither), with job reviews in the gateway's one review store.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ledger } from 'tollgate'
import { configError, type GatewayConfig } from '../config.js'
import type { JobRoutesOptions } from '../jobs/routes.js'
import type { ReviewStore } from '../marketplace/reviews.js'
import type { LocalLedger } from './ledger.js'

/** What {@link escrowJobs} needs. */
export type EscrowJobsOptions = {
  config: GatewayConfig
  ledger: Ledger
  ledgerUrl: string
  /** The local ledger (its escrow package and config object), when one is used. */
  local: LocalLedger | undefined
  asset: string
  publicBaseUrl: string
  secrets: string[]
  /** Where job reviews go: the gateway's one review store (with the marketplace's). */
  reviews: ReviewStore
}

/**
 * The options of the `/v1/jobs` routes, or `undefined` when no escrow package is known (jobs off).
 * Setting only one of `ESCROW_PACKAGE` / `ESCROW_CONFIG` fails the start, naming both.
 *
 * @example
 * ```ts
 * const jobs = await escrowJobs({ config, ledger, ledgerUrl, local, asset, publicBaseUrl, secrets, reviews })
 * ```
 */
export async function escrowJobs(
  options: EscrowJobsOptions,
): Promise<JobRoutesOptions | undefined> {
  const { config, local } = options
  // Escrowed jobs: on the emulator's package, or a configured package and config object.
  if ((config.escrowPackage === undefined) !== (config.escrowConfig === undefined)) {
    throw configError([
      'ESCROW_CONFIG (escrowConfig) and ESCROW_PACKAGE (escrowPackage): set both or neither',
    ])
  }
  const escrowPackage = config.escrowPackage ?? local?.modulesPackage
  const escrowConfig = config.escrowConfig ?? local?.escrow.config
  let jobs: JobRoutesOptions | undefined
  if (escrowPackage !== undefined && escrowConfig !== undefined) {
    jobs = {
      client: new SuiGrpcClient({
        network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
        baseUrl: options.ledgerUrl,
      }),
      ledger: options.ledger,
      package: escrowPackage,
      config: escrowConfig,
      asset: options.asset,
      network: config.network,
      publicBaseUrl: options.publicBaseUrl,
      secrets: options.secrets,
      reviews: options.reviews,
    }
  }
  return jobs
}
