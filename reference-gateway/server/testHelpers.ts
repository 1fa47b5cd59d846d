/**
 * Test-only: the embedded gateway that the gateway's, the MCP server's, the ACI's and the CLI's
 * integration tests run against — its own ledger emulator, stub upstreams and SQLite store in a
 * fresh data folder, on a free loopback port, logs off — started before a file's (or a
 * `describe`'s) tests and stopped after them.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { StartedLedger } from 'tollgate/testing'
import { afterAll, beforeAll } from 'vitest'
import { type GatewayConfigInput, loadConfig } from '../config.js'
import { type RunningGateway, type StartGatewayOptions, startGateway } from './server.js'

/** What {@link useTestGateway} starts the gateway with. */
export type TestGatewayOptions = Omit<StartGatewayOptions, 'config'> & {
  /**
   * Settings over the test defaults (port 0, a fresh `dataDir`, `emulatorLatencyMs` 0, `logLevel`
   * silent).
   */
  config?: GatewayConfigInput
  /** The environment the configuration is read from. Default: none (`{}`), not `process.env`. */
  env?: Record<string, string>
}

/**
 * The running gateway (every member of `RunningGateway`), its data folder, and — when it embeds
 * its ledger — the emulator and a client on it. Readable from `beforeAll` on.
 */
export type TestGateway = Omit<RunningGateway, 'emulator'> & {
  /** The gateway's data folder, removed after the tests. */
  readonly dataDir: string
  /** The embedded ledger emulator (reading it throws when the gateway joined another ledger). */
  readonly emulator: StartedLedger
  /** A `SuiGrpcClient` on the gateway's ledger. */
  readonly ledgerClient: SuiGrpcClient
  /** The USDC an address holds on the embedded ledger, in base units. */
  usdcBalance(address: string): Promise<bigint>
}

/**
 * Starts an embedded gateway before the tests of the enclosing file or `describe` and stops it
 * (and removes its data folder) after them. `options` may be a function, called in `beforeAll`,
 * for settings that depend on what an earlier hook started.
 */
export function useTestGateway(
  options: TestGatewayOptions | (() => TestGatewayOptions) = {},
): TestGateway {
  let started: { gateway: RunningGateway; dataDir: string; client: SuiGrpcClient } | undefined
  const running = () => {
    if (!started) throw new Error('useTestGateway: the gateway is readable from beforeAll on')
    return started
  }
  const emulator = () => {
    const { emulator } = running().gateway
    if (!emulator) throw new Error('useTestGateway: this gateway embeds no ledger emulator')
    return emulator
  }
  const extra: Record<string, () => unknown> = {
    dataDir: () => running().dataDir,
    ledgerClient: () => running().client,
    emulator,
    usdcBalance: () => async (address: string) => {
      const coinType = emulator().usdcType
      const { balance } = await running().client.core.getBalance({ owner: address, coinType })
      return BigInt(balance.balance)
    },
  }
  // Every other member is read from the running gateway when the test reads it.
  const handle = new Proxy({} as TestGateway, {
    get: (_, name) =>
      typeof name === 'string' && name in extra
        ? extra[name]?.()
        : Reflect.get(running().gateway, name),
  })
  beforeAll(async () => {
    const { config, env, ...rest } = typeof options === 'function' ? options() : options
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-gateway-'))
    try {
      const gateway = await startGateway({
        ...rest,
        config: loadConfig({
          env: env ?? {},
          overrides: { port: 0, dataDir, emulatorLatencyMs: 0, logLevel: 'silent', ...config },
        }),
      })
      const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: gateway.ledger.url })
      started = { gateway, dataDir, client }
    } catch (error) {
      rmSync(dataDir, { recursive: true, force: true })
      throw error
    }
  })
  afterAll(async () => {
    if (!started) return
    await started.gateway.stop()
    rmSync(started.dataDir, { recursive: true, force: true })
  })
  return handle
}
