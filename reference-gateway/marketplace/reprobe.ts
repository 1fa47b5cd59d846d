/**
 * Re-probes of listed endpoints and the listing state machine (docs/marketplace.md, "Re-probes"):
 *
 * | State | Probe | Next |
 * |---|---|---|
 * | listed | fails, 3rd in a row | suspended |
 * | listed | fails, 1st or 2nd in a row | listed |
 * | listed | passes | listed (count reset) |
 * | suspended | passes | listed |
 * | suspended | fails | suspended |
 *
 * One pass ({@link Reprober.runOnce}) takes the database lease `reprobe` (so that one gateway process
 * at a time probes), probes every due listing with a concurrency limit, stores every probe, and
 * schedules each listing's next probe one interval (plus jitter) later. A passing probe also
 * records the terms it read (network, asset, price, `payTo`), so a seller's new price shows.
 *
 * @module
 */
import type { ListingState } from '../db/schema.js'
import type { MarketplaceStore } from './store.js'
import type { GateOptions, GateVerdict, Submission } from './submission.js'
import { judgeSubmission } from './submission.js'

/** Failed re-probes in a row that suspend a listing (docs/marketplace.md, "Re-probes"). */
export const failuresBeforeSuspension = 3

/** The state machine's move for one probe. */
export function nextState(
  state: Exclude<ListingState, 'delisted'>,
  failuresInARow: number,
  passed: boolean,
): { state: Exclude<ListingState, 'delisted'>; consecutiveFailures: number } {
  if (passed) return { state: 'listed', consecutiveFailures: 0 }
  const failures = failuresInARow + 1
  return {
    state: state === 'suspended' || failures >= failuresBeforeSuspension ? 'suspended' : 'listed',
    consecutiveFailures: failures,
  }
}

/** Options of {@link createReprober}. */
export type ReproberOptions = {
  store: MarketplaceStore
  gates: GateOptions
  /** Time between probes of one listing, ms. Default one day. */
  intervalMs?: number | undefined
  /** Random delay added to each next probe, up to this many ms. Default 0. */
  jitterMs?: number | undefined
  /** Probes in flight at once. Default 8. */
  concurrency?: number | undefined
  /**
   * How long the lease lasts without renewal, ms; every probe renews it, and a worker that finds it
   * taken by another process stops. Longer than one probe. Default one interval.
   */
  leaseMs?: number | undefined
  /** Listings probed per pass at most. Default 1 000. */
  batch?: number | undefined
  /** This process's name on the lease. */
  holder: string
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
  /** Random number in [0, 1). Default `Math.random`. */
  random?: (() => number) | undefined
  /** The judge (tests). Default {@link judgeSubmission}. */
  judge?: ((submission: Submission, gates: GateOptions) => Promise<GateVerdict>) | undefined
}

/** The re-prober. */
export type Reprober = {
  /** One pass; resolves with the number of listings probed (0 when another process holds the lease). */
  runOnce(): Promise<number>
}

/**
 * The re-prober over the marketplace store. The caller schedules {@link Reprober.runOnce}.
 *
 * @example
 * ```ts
 * const reprober = createReprober({ store, gates, holder: 'gateway-1' })
 * setInterval(() => void reprober.runOnce(), 60_000)
 * ```
 */
export function createReprober(options: ReproberOptions): Reprober {
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const interval = options.intervalMs ?? 24 * 60 * 60_000
  const jitter = options.jitterMs ?? 0
  const concurrency = options.concurrency ?? 8
  const judge = options.judge ?? judgeSubmission
  return {
    async runOnce() {
      const started = now()
      const lease = options.leaseMs ?? interval
      if (!(await options.store.acquireLease('reprobe', options.holder, started, lease))) return 0
      const due = await options.store.dueListings(started, options.batch ?? 1_000)
      let next = 0
      let held = true
      let probed = 0
      const worker = async () => {
        for (let i = next++; held && i < due.length; i = next++) {
          const listing = due[i]
          if (listing === undefined || listing.state === 'delisted') continue
          let verdict: GateVerdict
          try {
            verdict = await judge(
              {
                seller: listing.seller,
                url: listing.url,
                method: listing.method,
                probeBody: listing.probeBody,
              },
              options.gates,
            )
          } catch (error) {
            verdict = { status: 'unusable', message: (error as Error).message }
          }
          const passed = verdict.status === 'passed'
          const at = now()
          await options.store.addProbe({
            listingId: listing.id,
            kind: 'reprobe',
            passed,
            failedGate:
              verdict.status === 'failed'
                ? (verdict.failures[0]?.gate ?? verdict.notJudged[0] ?? null)
                : verdict.status === 'unusable'
                  ? 'error'
                  : null,
            message: verdict.status === 'unusable' ? verdict.message : verdict.summary,
            probedAt: new Date(at).toISOString(),
          })
          await options.store.setListingState(
            listing.id,
            {
              ...nextState(listing.state, listing.consecutiveFailures, passed),
              nextProbeAtMs: at + interval + Math.floor(random() * jitter),
              // A passing probe read the seller's current terms: the listing shows them.
              ...(verdict.status === 'passed' ? { terms: verdict.terms } : {}),
              // Not over a newer verdict: a process that stalled past its lease while probing finds
              // the listing re-probed by the lease's new holder, and leaves it as that one wrote it.
              ifNextProbeAtMs: listing.nextProbeAtMs,
            },
            new Date(at),
          )
          probed++
          // Renew the lease; lost (this process stalled past it), leave the rest to its new holder.
          if (!(await options.store.acquireLease('reprobe', options.holder, now(), lease))) {
            held = false
          }
        }
      }
      await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, worker))
      return probed
    },
  }
}
