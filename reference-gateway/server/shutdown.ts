/**
 * The gateway's graceful shutdown: every resource the start opens registers how to close it, and
 * those steps run last-first, once, whether the start failed half way or `stop()` was called. A stop
 * first stops accepting, lets in-flight calls finish (served, or owed a refund) up to the shutdown
 * timeout, pays due refunds once more, then runs the steps.
 *
 * @module
 */
import type { Server } from 'node:http'
import type { GatewayApp, GatewayLogger } from '../app/app.js'
import { errorFields } from '../startup.js'

/** One step that closes what the start opened. */
export type CleanupStep = () => Promise<unknown> | unknown

/** The steps that undo a start, run in reverse order of registration. */
export type Cleanups = {
  /** Registers a step (run before every step registered earlier). */
  push(step: CleanupStep): void
  /** Runs the registered steps last-first; a step that fails is logged and the rest still run. */
  run(): Promise<void>
}

/**
 * A stack of cleanup steps.
 *
 * @example
 * ```ts
 * const cleanups = createCleanups(logger)
 * cleanups.push(() => store.close())
 * await cleanups.run()
 * ```
 */
export function createCleanups(logger: GatewayLogger): Cleanups {
  const cleanups: CleanupStep[] = []
  const cleanup = async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step()
      } catch (error) {
        logger.warn({ event: 'shutdown_step_failed', error: errorFields(error) })
      }
    }
    cleanups.length = 0
  }
  return { push: (step) => void cleanups.push(step), run: cleanup }
}

/** What {@link gracefulStop} stops. */
export type GracefulStopOptions = {
  server: Server
  /** HTTP requests not yet answered. */
  httpInFlight(): number
  gateway: GatewayApp
  /** Whether an operator key is configured (then due refunds are paid once more). */
  refunds: boolean
  logger: GatewayLogger
  cleanups: Cleanups
  /** How long in-flight calls may take to finish, ms. */
  shutdownTimeoutMs: number
}

/**
 * The running gateway's `stop()`: idempotent, every call answers the same promise.
 *
 * @example
 * ```ts
 * const stop = gracefulStop({ server, httpInFlight, gateway, refunds: true, logger, cleanups, shutdownTimeoutMs: 10_000 })
 * process.once('SIGTERM', stop)
 * ```
 */
export function gracefulStop(options: GracefulStopOptions): () => Promise<void> {
  const { server, gateway, logger } = options
  let stopping: Promise<void> | undefined
  async function stop(): Promise<void> {
    stopping ??= (async () => {
      // Stop accepting; finish what is in flight (served or owed a refund), then close.
      server.close()
      server.closeIdleConnections()
      const deadline = Date.now() + options.shutdownTimeoutMs
      while ((options.httpInFlight() > 0 || gateway.paidInFlight() > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        server.closeIdleConnections()
      }
      if (options.refunds) {
        await gateway.paywall.seller.refunder.runOnce().catch(() => undefined)
      }
      logger.info({ event: 'stopped', paidInFlight: gateway.paidInFlight() })
      await options.cleanups.run()
    })()
    return stopping
  }
  return stop
}
