/**
 * `startLedger()`: a local Sui ledger emulator on loopback that the unmodified `SuiGrpcClient`
 * drives. PAYMENTS ON IT ARE NOT REAL.
 *
 * @module
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { channelRegistryId } from './channel.js'
import { createEngine, type EngineOptions, type LedgerEngine } from './engine.js'
import { escrowAdminCapId, escrowConfigId } from './escrowAdmin.js'
import { type FaucetRequest, type FaucetResult, runFaucet } from './faucet.js'
import { type Faults, startServer } from './server.js'

/** Options of {@link startLedger}. Every field is optional. */
export type StartLedgerOptions = EngineOptions & {
  /** TCP port on 127.0.0.1. Default 0 (a free port). */
  port?: number
  /** Settlement latency in ms before each execution commits. Default 0. */
  latencyMs?: number
  /** Faults to inject from the start (they can be changed later through `faults`). */
  faults?: Faults
  /** Advance the epoch every N ms. Default: never (call `advanceEpoch()`). */
  epochDurationMs?: number
}

/** A running local ledger. */
export type StartedLedger = {
  /** Base URL for `new SuiGrpcClient({ network: 'mainnet', baseUrl: url })`. */
  url: string
  chainId: string
  /** The coin type the ledger treats as USDC. */
  usdcType: string
  /** Address of the project's package (agent registry, receipt anchor, escrow). */
  modulesPackage: string
  /** Escrow: the shared `EscrowConfig` object's id (fee rate, treasury) and the `AdminCap`'s id. */
  escrow: { config: string; adminCap: string }
  /** Session channels: the shared `Registry` object channel ids are derived under. */
  channel: { registry: string }
  /** Mutable fault switches, read on every request. */
  faults: Faults
  /** Mints test USDC and SUI to an address (see `POST {url}/faucet`). */
  faucet(request: FaucetRequest): FaucetResult
  /** A fresh Ed25519 keypair funded by the faucet (default 10 USDC and 1 SUI as coins). */
  createTestWallet(funding?: Omit<FaucetRequest, 'address'>): Ed25519Keypair
  advanceEpoch(): void
  /**
   * Moves the ledger's clock (what `&Clock` reads) forward by `ms`, e.g. past a channel's grace
   * period; returns the new time. From another process: `POST {url}/clock` with
   * `{ "advanceMs": n }` (the server answers on 127.0.0.1 only).
   */
  advanceClock(ms: number): number
  /** The engine, for assertions on state in tests. */
  engine: LedgerEngine
  stop(): Promise<void>
}

/**
 * Starts a local ledger on 127.0.0.1.
 *
 * @param options - port (default 0), latencyMs (default 0), chainId (default mainnet), usdcType
 *   (default mainnet USDC), seed, stateFile (snapshot, survives restarts), faults.
 * @example
 * const ledger = await startLedger()
 * const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledger.url })
 * const buyer = ledger.createTestWallet({ usdc: '5' })
 * // ... build, sign, client.core.executeTransaction(...)
 * await ledger.stop()
 */
export async function startLedger(options: StartLedgerOptions = {}): Promise<StartedLedger> {
  const engine = createEngine(options)
  const server = await startServer({
    engine,
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.latencyMs === undefined ? {} : { latencyMs: options.latencyMs }),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  })
  const timer = options.epochDurationMs
    ? setInterval(() => engine.advanceEpoch(), options.epochDurationMs)
    : undefined
  timer?.unref()
  return {
    url: server.url,
    chainId: engine.state.chainId,
    usdcType: engine.state.usdcType,
    modulesPackage: engine.modulesPackage,
    escrow: {
      config: escrowConfigId(engine.modulesPackage),
      adminCap: escrowAdminCapId(engine.modulesPackage),
    },
    channel: { registry: channelRegistryId(engine.modulesPackage) },
    faults: server.faults,
    faucet: (request) => runFaucet(engine, request),
    createTestWallet(funding = {}) {
      const keypair = Ed25519Keypair.generate()
      runFaucet(engine, { ...funding, address: keypair.toSuiAddress() })
      return keypair
    },
    advanceEpoch: () => engine.advanceEpoch(),
    advanceClock: (ms) => engine.advanceClock(ms),
    engine,
    async stop() {
      if (timer) clearInterval(timer)
      engine.save()
      await server.close()
    },
  }
}

/** Stops a ledger started with {@link startLedger}. */
export function stopLedger(ledger: StartedLedger): Promise<void> {
  return ledger.stop()
}
