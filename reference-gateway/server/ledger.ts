/**
 * The gateway's ledger and operator: a configured full node, or the local ledger (the embedded
 * emulator on `EMULATOR_PORT`, or a `tollgate ledger` already running there); the operator key that pays refunds (`OPERATOR_KEY`, or on the emulator a fresh
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
import type { GatewayLogger, LedgerInfo } from '../app/app.js'
import { configError, type GatewayConfig } from '../config.js'
import type { Cleanups } from './shutdown.js'

/** The ledger side of a starting gateway. */
export type GatewayLedger = {
  ledger: Ledger
  /** The ledger's URL (the emulator's, when embedded). */
  ledgerUrl: string
  ledgerInfo: LedgerInfo
  /** The embedded ledger emulator, when one was started in this process. */
  emulator: StartedLedger | undefined
  /** The local ledger (started here or joined): its package ids. Undefined on a full node. */
  local: LocalLedger | undefined
  /** The operator key (refunds, receipt anchors), if one is configured or made on the emulator. */
  operator: Signer | undefined
  payTo: string
  secrets: string[]
}

/** A local ledger's ids, whether this process started it or joined one already running. */
export type LocalLedger = {
  url: string
  modulesPackage: string
  escrow: { config: string }
  /** The channel module's shared registry (sessions), when the ledger says. */
  channel?: { registry: string } | undefined
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
  // Ledger: a configured full node, or the local one (started here, or joined).
  let emulator: StartedLedger | undefined
  let local: LocalLedger | undefined
  let ledgerUrl = config.ledgerUrl
  let found: LedgerInfo['local']
  if (ledgerUrl === undefined) {
    const opened = await openLocalLedger(config, asset, cleanups)
    emulator = opened.emulator
    local = opened.local
    found = opened.found
    ledgerUrl = local.url
    if (found.mode !== 'started') logger.warn({ event: 'local_ledger', message: found.note })
  }
  const ledgerInfo: LedgerInfo = {
    url: ledgerUrl,
    network: config.network,
    emulated: local !== undefined,
    ...(found === undefined ? {} : { local: found }),
  }

  // Operator key (refunds) and recipient.
  let operator: Signer | undefined
  if (config.operatorKey !== undefined) operator = operatorSigner(config.operatorKey)
  else if (local !== undefined) {
    const keypair = Ed25519Keypair.generate()
    const funding = { address: keypair.toSuiAddress(), ...operatorFunding }
    if (emulator !== undefined) emulator.faucet(funding)
    else await faucetOver(local.url, funding)
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
  if (config.challengeSecrets === undefined && local === undefined) {
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
  return { ledger, ledgerUrl, ledgerInfo, emulator, local, operator, payTo, secrets }
}

/**
 * The local ledger on `EMULATOR_PORT` (default 0 here; `tollgate gateway` asks for 9123): started
 * there when the port is free; joined when a local ledger for the same USDC already listens there;
 * otherwise started on a free port, and the note says why.
 */
async function openLocalLedger(
  config: GatewayConfig,
  asset: string,
  cleanups: Cleanups,
): Promise<{
  emulator: StartedLedger | undefined
  local: LocalLedger
  found: NonNullable<LedgerInfo['local']>
}> {
  const { readLocalLedger, startLedger } = await import('tollgate/testing')
  const start = async (port: number) => {
    const started = await startLedger({
      port,
      latencyMs: config.emulatorLatencyMs,
      ...(config.emulatorState === undefined ? {} : { stateFile: config.emulatorState }),
    })
    cleanups.push(() => started.stop())
    return started
  }
  const wanted = config.emulatorPort ?? 0
  let taken: string
  try {
    const emulator = await start(wanted)
    return {
      emulator,
      local: emulator,
      found: { mode: 'started', note: `the embedded local ledger listens on ${emulator.url}` },
    }
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EADDRINUSE') throw error
    const url = `http://127.0.0.1:${wanted}`
    const there = await readLocalLedger(url)
    if (there.status === 'local' && there.ledger.usdcType === asset) {
      return {
        emulator: undefined,
        local: {
          url: there.ledger.url,
          modulesPackage: there.ledger.modulesPackage,
          escrow: { config: there.ledger.escrowConfig },
          ...(there.ledger.channelRegistry === undefined
            ? {}
            : { channel: { registry: there.ledger.channelRegistry } }),
        },
        found: {
          mode: 'joined',
          note: `joined the local ledger already running on ${url} (tollgate ledger)${config.emulatorState === undefined ? '' : '; EMULATOR_STATE is that ledger’s to keep, not used here'}`,
        },
      }
    }
    taken =
      there.status === 'local'
        ? `a local ledger for another USDC type (${there.ledger.usdcType})`
        : `something else (${there.reason})`
  }
  const emulator = await start(0)
  return {
    emulator,
    local: emulator,
    found: {
      mode: 'moved',
      note: `127.0.0.1:${wanted} is taken by ${taken}; the embedded local ledger listens on ${emulator.url} instead (tollgate wallet fund --ledger ${emulator.url})`,
    },
  }
}

/** Mints test money on a local ledger through its HTTP faucet. */
async function faucetOver(url: string, body: Record<string, string>): Promise<void> {
  const response = await nodeFetch(`${url}/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (!response.ok) {
    throw new Error(`the local ledger's faucet at ${url} answered ${response.status}`)
  }
  await response.arrayBuffer()
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
