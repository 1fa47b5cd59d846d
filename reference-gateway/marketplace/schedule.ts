/**
 * The re-probe schedule inside a running gateway: every `checkEveryMs` it runs one
 * {@link Reprober.runOnce} pass, which probes the listings whose next probe is due. Passes never
 * overlap (the next one is timed after the previous one ends). Nothing is kept in memory: when each
 * listing is due is in the database, so a restarted gateway carries on where it stopped, and the
 * database lease of the pass makes several gateway processes probe each listing once per interval.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { createReprober, type Reprober } from './reprobe.js'
import type { MarketplaceStore } from './store.js'
import type { GateOptions } from './submission.js'

/** Options of {@link startReprobeSchedule}. */
export type ReprobeScheduleOptions = {
  reprober: Reprober
  /** Time between the end of one pass and the start of the next, ms. */
  checkEveryMs: number
  /** A failed pass (a database error): logged by the caller; the schedule carries on. */
  onError?: ((error: unknown) => void) | undefined
  /** A finished pass and how many listings it probed. */
  onPass?: ((probed: number) => void) | undefined
}

/** A running schedule. */
export type ReprobeSchedule = {
  /** Stops the timer and waits for a pass in progress. Idempotent. */
  stop(): Promise<void>
}

/**
 * Starts running re-probe passes on a timer (unref'd: it never keeps the process alive).
 *
 * @example
 * ```ts
 * const schedule = startReprobeSchedule({ reprober, checkEveryMs: 60_000 })
 * await schedule.stop()
 * ```
 */
export function startReprobeSchedule(options: ReprobeScheduleOptions): ReprobeSchedule {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<void> = Promise.resolve()
  const pass = async () => {
    try {
      // Not inside `onPass?.(…)`: optional chaining would skip the pass when there is no callback.
      const probed = await options.reprober.runOnce()
      options.onPass?.(probed)
    } catch (error) {
      options.onError?.(error)
    }
  }
  const arm = () => {
    if (stopped) return
    timer = setTimeout(() => {
      running = pass().then(arm)
    }, options.checkEveryMs)
    timer.unref?.()
  }
  arm()
  return {
    async stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      await running
    },
  }
}

/** The gateway settings of the schedule (see docs/gateway.md). */
export type ReprobeSettings = {
  reprobeIntervalMs: number
  reprobeJitterMs: number
  reprobeConcurrency: number
  reprobeCheckMs: number
}

/**
 * The gateway's re-probe schedule from its settings, logging failed and busy passes.
 *
 * @example
 * ```ts
 * const reprobes = startMarketplaceReprobes(config, store, gates, logger)
 * ```
 */
export function startMarketplaceReprobes(
  settings: ReprobeSettings,
  store: MarketplaceStore,
  gates: GateOptions,
  logger: {
    info(object: Record<string, unknown>): void
    warn(object: Record<string, unknown>): void
  },
): ReprobeSchedule {
  return startReprobeSchedule({
    reprober: createReprober({
      store,
      gates,
      // Unique per process: the lease tells processes apart by this name.
      holder: `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`,
      intervalMs: settings.reprobeIntervalMs,
      jitterMs: settings.reprobeJitterMs,
      concurrency: settings.reprobeConcurrency,
      // Renewed by every probe; a stopped process's lease frees within minutes, not an interval.
      leaseMs: Math.max(5 * 60_000, 3 * settings.reprobeCheckMs),
    }),
    checkEveryMs: settings.reprobeCheckMs,
    onPass: (probed) => {
      if (probed > 0) logger.info({ event: 'reprobe_pass', probed })
    },
    onError: (error) =>
      logger.warn({ event: 'reprobe_pass_failed', error: (error as Error).name ?? 'Error' }),
  })
}
