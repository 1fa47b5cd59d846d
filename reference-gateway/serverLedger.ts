/**
 * The gateway's ledger and operator: a configured full node, or the embedded ledger emulator on its
 * own loopback port; the operator key that pays refunds (`OPERATOR_KEY`, or on the emulator a fresh
 * funded key); the recipient of payments; and the challenge secrets.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Signer } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createLedger, type Ledger, signerFromSecretKey } from 'tollgate'
import { nodeFetch } from 'tollgate/node'
import type { StartedLedger } from 'tollgate/testing'
import type { GatewayLogger, LedgerInfo } from './app.js'
import { configError, type GatewayConfig } from './config.js'
import type { Cleanups } from './serverShutdown.js'

/** The ledger side of a starting gateway. */
export type GatewayLedger = {
  ledger: Ledger
  /** The ledger's URL (the emulator's, when embedded). */
  ledgerUrl: string
  ledgerInfo: LedgerInfo
  /** The embedded ledger emulator, when one was started. */
  emulator: StartedLedger | undefined
  /** The operator key (refunds, receipt anchors), if one is configured or made on the emulator. */
  operator: Signer | undefined
  payTo: string
  secrets: string[]
}

/** Test money the embedded emulator gives a fresh operator key (gas for refunds). */
const operatorFunding = { usdc: '100', sui: '10' }

/**
 * Resolves the ledger, the operator key, the recipient and the challenge secrets. Starts the
 * embedded emulator when no `LEDGER_URL` is set (registering its stop with `cleanups`). A bad
 * `OPERATOR_KEY` or a missing `PAY_TO` fails with the setting named.
 *
 * @example
 * ```ts
 * const { ledger, payTo, operator } = await openGatewayLedger(config, asset, logger, cleanups)
 * ```
 */
export async function openGatewayLedger(
  config: GatewayConfig,
  asset: string,
  logger: GatewayLogger,
  cleanups: Cleanups,
): Promise<GatewayLedger> {
  // Ledger: a configured full node, or the embedded emulator.
  let emulator: StartedLedger | undefined
  let ledgerUrl = config.ledgerUrl
  if (ledgerUrl === undefined) {
    const { startLedger } = await import('tollgate/testing')
    emulator = await startLedger({
      latencyMs: config.emulatorLatencyMs,
      ...(config.emulatorState === undefined ? {} : { stateFile: config.emulatorState }),
    })
    cleanups.push(() => emulator?.stop())
    ledgerUrl = emulator.url
  }
  const ledgerInfo: LedgerInfo = {
    url: ledgerUrl,
    network: config.network,
    emulated: emulator !== undefined,
  }

  // Operator key (refunds) and recipient.
  let operator: Signer | undefined
  if (config.operatorKey !== undefined) operator = operatorSigner(config.operatorKey)
  else if (emulator !== undefined) {
    const keypair = Ed25519Keypair.generate()
    emulator.faucet({ address: keypair.toSuiAddress(), ...operatorFunding })
    operator = keypair
  }
  const operatorAddress = operator?.toSuiAddress()
  const payTo = config.payTo ?? operatorAddress
  if (payTo === undefined) {
    throw configError([
      'PAY_TO (payTo): required when no OPERATOR_KEY is set and the ledger is not the embedded emulator',
    ])
  }
  if (operator === undefined) {
    logger.warn({
      event: 'no_operator_key',
      message: 'OPERATOR_KEY is not set: refunds of failed paid calls stay owed (tollgate refunds)',
    })
  }
  const secrets = config.challengeSecrets ?? [randomBytes(32).toString('base64url')]
  if (config.challengeSecrets === undefined && emulator === undefined) {
    logger.warn({
      event: 'random_challenge_secret',
      message:
        'CHALLENGE_SECRETS is not set: a random secret is used; challenges do not survive a restart or work across processes',
    })
  }

  const ledger = createLedger({
    url: ledgerUrl,
    fetch: nodeFetch,
    network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
    usdcType: asset,
    timeoutMs: config.ledgerTimeoutMs,
    ...(operator === undefined ? {} : { operator }),
  })
  return { ledger, ledgerUrl, ledgerInfo, emulator, operator, payTo, secrets }
}

/** The signer of `OPERATOR_KEY`; a key it cannot sign with fails the start, naming the setting. */
function operatorSigner(secret: string): Signer {
  const read = signerFromSecretKey(secret)
  if (read.status === 'valid') return read.signer
  throw configError([
    read.reason === 'malformed'
      ? 'OPERATOR_KEY (operatorKey): not a valid Sui private key'
      : `OPERATOR_KEY (operatorKey): the ${read.scheme} scheme cannot sign`,
  ])
}
