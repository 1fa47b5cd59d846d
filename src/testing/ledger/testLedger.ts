/**
 * `useTestLedger()`: one local ledger per test file, started before the file's tests and stopped
 * after them, for any test runner whose hooks take a function (vitest, jest, `node:test`). The
 * package imports no test runner: the suite hands its own `beforeAll` and `afterAll` in.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { type StartedLedger, type StartLedgerOptions, startLedger } from './index.js'

/**
 * The hooks of a test runner that {@link useTestLedger} registers on: vitest's and jest's
 * `beforeAll`/`afterAll`, or `node:test`'s `before`/`after` passed under these names.
 */
export type TestHooks = {
  /** Runs a function once before the file's (or the suite's) tests; may return a promise. */
  beforeAll: (fn: () => Promise<void>) => unknown
  /** Runs a function once after them; may return a promise. */
  afterAll: (fn: () => Promise<void>) => unknown
}

/**
 * The handle that {@link useTestLedger} returns: the running ledger's own members (`url`,
 * `usdcType`, `faucet`, `createTestWallet`, `faults`, `engine`, …), a client on it and a balance
 * reader. Its members are readable from the runner's `beforeAll` on (once the ledger has started);
 * reading one earlier throws. The hooks stop the ledger: the handle has no `stop`.
 */
export type TestLedger = Omit<StartedLedger, 'stop'> & {
  /** The running ledger itself, for code that takes a `StartedLedger`. */
  readonly ledger: StartedLedger
  /** A `SuiGrpcClient` on the ledger. */
  readonly client: SuiGrpcClient
  /** The USDC an address holds in base units, as the client reports it (coins and address balance). */
  usdcBalance(address: string): Promise<bigint>
}

/**
 * Starts a local ledger before a test file's tests and stops it after them. Payments on it are
 * test money. Call it at the top of the file (or of a `describe`), before the hooks that use it:
 * the file's own `beforeAll` then runs once the ledger is up (fund wallets, start servers there),
 * and with vitest's default order (after-hooks registered later run first) the file's servers stop
 * before the ledger does.
 *
 * @param hooks - the runner's `beforeAll` and `afterAll` (`node:test`: `{ beforeAll: before,
 *   afterAll: after }`).
 * @param options - those of `startLedger()`: port (default 0, a free one), latencyMs (default 0),
 *   faults, stateFile, epochDurationMs, …
 * @returns a handle whose properties are readable from `beforeAll` on.
 * @example
 * ```ts
 * import assert from 'node:assert/strict'
 * import { after, before, it } from 'node:test'
 * import { useTestLedger } from 'tollgate/testing'
 *
 * // vitest or jest: useTestLedger({ beforeAll, afterAll })
 * const chain = useTestLedger({ beforeAll: before, afterAll: after })
 *
 * it('funds a buyer', async () => {
 *   const buyer = chain.createTestWallet({ usdc: '5' })
 *   assert.equal(await chain.usdcBalance(buyer.toSuiAddress()), 5_000_000n)
 * })
 * ```
 */
export function useTestLedger(hooks: TestHooks, options: StartLedgerOptions = {}): TestLedger {
  let started: { ledger: StartedLedger; client: SuiGrpcClient } | undefined
  const running = () => {
    if (!started) throw new Error('useTestLedger: the ledger is readable from beforeAll on')
    return started
  }
  const ledger = () => running().ledger
  const handle: TestLedger = {
    get ledger() {
      return ledger()
    },
    get client() {
      return running().client
    },
    get url() {
      return ledger().url
    },
    get chainId() {
      return ledger().chainId
    },
    get usdcType() {
      return ledger().usdcType
    },
    get modulesPackage() {
      return ledger().modulesPackage
    },
    get escrow() {
      return ledger().escrow
    },
    get faults() {
      return ledger().faults
    },
    get engine() {
      return ledger().engine
    },
    get channel() {
      return ledger().channel
    },
    advanceClock: (ms) => ledger().advanceClock(ms),
    faucet: (request) => ledger().faucet(request),
    createTestWallet: (funding) => ledger().createTestWallet(funding),
    advanceEpoch: () => ledger().advanceEpoch(),
    async usdcBalance(address) {
      const { balance } = await running().client.core.getBalance({
        owner: address,
        coinType: ledger().usdcType,
      })
      return BigInt(balance.balance)
    },
  }
  hooks.beforeAll(async () => {
    const fresh = await startLedger(options)
    started = {
      ledger: fresh,
      client: new SuiGrpcClient({ network: 'mainnet', baseUrl: fresh.url }),
    }
  })
  hooks.afterAll(async () => {
    await started?.ledger.stop()
  })
  return handle
}
