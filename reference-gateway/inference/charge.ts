/**
 * What a keyed call is charged (docs/inference.md, "Credit"): before the upstream is called, the
 * most the call can cost is reserved — the prompt's generous token estimate and the output allowed
 * (`max_tokens`, or the model's output cap within what the window leaves) at the model's token
 * prices; after the answer, the call settles at the upstream's `usage` (never above the
 * reservation) and the rest goes back. While a call runs its reservation's lease is renewed; a
 * process that dies mid-call leaves a lease that lapses, and the sweeper gives the reservation back.
 *
 * @module
 */
import type { KeyStore, Usage } from './keys.js'
import type { InferenceModel } from './models.js'
import { tokenCost } from './pricing.js'
import type { ChatRequest } from './request.js'

/** The most a call can cost, and the counts it was reckoned from. */
export type CallReservation = {
  /** The prompt's estimated tokens (`estimatePromptTokens`). */
  promptTokens: number
  /** Output tokens allowed: the `max_tokens` sent upstream. */
  outputTokens: number
  /** Base units reserved. */
  amount: bigint
}

/** Result of {@link reservationOf}. */
export type ReservationCheck =
  | { status: 'valid'; reservation: CallReservation }
  | { status: 'invalid'; param: 'max_tokens' | 'messages'; message: string }

/**
 * The reservation of a call whose prompt is estimated at `promptTokens` (within the window: see
 * `checkContextWindow`): `max_tokens` when given (at most the model's output cap), else the cap
 * within what the window leaves.
 *
 * @example
 * ```ts
 * const check = reservationOf(model, body, estimatePromptTokens(body.messages))
 * if (check.status === 'valid') await keys.reserve(keyId, check.reservation.amount, entry)
 * ```
 */
export function reservationOf(
  model: InferenceModel,
  body: ChatRequest,
  promptTokens: number,
): ReservationCheck {
  if (body.max_tokens !== undefined && body.max_tokens > model.maxOutput) {
    return {
      status: 'invalid',
      param: 'max_tokens',
      message: `max_tokens: must be at most ${model.maxOutput} for ${model.id}`,
    }
  }
  const outputTokens =
    body.max_tokens ?? Math.min(model.maxOutput, model.contextWindow - promptTokens)
  if (outputTokens < 1) {
    return {
      status: 'invalid',
      param: 'messages',
      message:
        `This model's context window is ${model.contextWindow} tokens; the messages are ` +
        `estimated at ${promptTokens} tokens, leaving no room for an answer.`,
    }
  }
  return {
    status: 'valid',
    reservation: {
      promptTokens,
      outputTokens,
      amount: tokenCost(model, { promptTokens, completionTokens: outputTokens }),
    },
  }
}

/**
 * What a served call costs: its `usage` at the model's prices. A count the upstream did not report
 * is taken from `fallback` (a count of the answer's own), else from the reservation; the store caps
 * the result at the reservation.
 *
 * @example
 * ```ts
 * const cost = costOf(model, reservation, { promptTokens: 12, completionTokens: 30 })
 * ```
 */
export function costOf(
  model: InferenceModel,
  reservation: CallReservation,
  usage: Usage,
  fallback: { completionTokens?: number | undefined } = {},
): bigint {
  return tokenCost(model, {
    promptTokens: usage.promptTokens ?? reservation.promptTokens,
    completionTokens:
      usage.completionTokens ?? fallback.completionTokens ?? reservation.outputTokens,
  })
}

/** A reservation's lease, renewed while its call runs. */
export type LeaseKeeper = {
  /** Stops renewing (the call settled or was restored). */
  stop(): void
}

/**
 * Renews the lease of reservation `entryId` every third of `leaseMs` (each renewal good for
 * `leaseMs` from then) until stopped. A failed renewal is tried again at the next tick.
 *
 * @example
 * ```ts
 * const lease = keepLease(keys, entryId, 60_000)
 * try { … } finally { lease.stop() }
 * ```
 */
export function keepLease(keys: KeyStore, entryId: string, leaseMs: number): LeaseKeeper {
  const timer = setInterval(
    () => void keys.renew(entryId, Date.now() + leaseMs).catch(() => {}),
    Math.max(1, Math.floor(leaseMs / 3)),
  )
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
