/**
 * The upstreams behind the models: one implementation per upstream kind of `models.ts`, all with the
 * same shape, so the API never branches on the kind. `openai-compatible` forwards to an OpenAI-style
 * `/chat/completions` with the operator's key, through the gateway's upstream runner (timeouts,
 * bounded retries of transient failures, a streamed answer handed back as soon as its headers
 * arrive, body untouched).
 *
 * @module
 */
import type { BlobStore } from '../blobs/blobStore.js'
import { openaiCompatible } from '../upstreams/openaiCompatible.js'
import { callUpstream, type UpstreamEvent, type UpstreamResult } from '../upstreams/upstream.js'
import {
  type ConfidentialUpstream,
  createConfidentialUpstream,
  type VerifiedReceipt,
} from './confidential.js'
import type { UpstreamRefused } from './confidentialStream.js'
import type { PaymentBinding } from './gatewayReceipt.js'
import type { ModelUpstreamConfig } from './models.js'
import type { ChatRequest } from './request.js'

/** One call to a model's upstream. */
export type UpstreamChat = {
  /**
   * The validated request (its `model` is the public id; the upstream maps it), with, for a keyed
   * stream, `stream_options.include_usage` so that its last chunk reports the tokens to charge.
   */
  request: ChatRequest & { stream_options?: { include_usage: boolean } | undefined }
  /** The caller went away, or the gateway stops. */
  signal: AbortSignal
  /** Request id, for provider-side idempotency and logs. */
  requestId: string
  /** What paid for the call (bound into a confidential answer's gateway receipt). */
  payment?: PaymentBinding | undefined
}

/**
 * What serves a model: a JSON or SSE answer, a secret-free failure, or (confidential upstreams) a
 * refusal because the enclave did not prove itself.
 */
export type InferenceUpstream = {
  readonly kind: ModelUpstreamConfig['kind']
  chat(call: UpstreamChat): Promise<UpstreamResult | UpstreamRefused>
  /** The enclave behind a `confidential` upstream. */
  readonly confidential?: ConfidentialUpstream | undefined
}

/** What every upstream kind may use. */
export type UpstreamDependencies = {
  /** Provider keys by setting name (`INFERENCE_API_KEY`). Only ever sent to the upstream. */
  providerKeys: Readonly<Record<string, string>>
  /** Fetch for upstream calls. Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
  /** Per-attempt timeout override, ms. Default the OpenAI-compatible family's (120 s). */
  timeoutMs?: number | undefined
  onEvent?: ((event: UpstreamEvent) => void) | undefined
  /** Stores each verified receipt of a confidential answer before the answer is released. */
  onReceipt?: ((receipt: VerifiedReceipt) => Promise<void>) | undefined
}

const noBlobs: BlobStore = {
  put: () => Promise.reject(new Error('chat completions store no media')),
}

/**
 * Builds the upstream of a model from its configuration.
 *
 * @example
 * ```ts
 * const upstream = createUpstream({ kind: 'openai-compatible', baseUrl }, { providerKeys: {} })
 * const result = await upstream.chat({ request, signal, requestId })
 * ```
 */
export function createUpstream(
  config: ModelUpstreamConfig,
  modelId: string,
  deps: UpstreamDependencies,
): InferenceUpstream {
  switch (config.kind) {
    case 'openai-compatible': {
      const upstreamModel = config.model ?? modelId
      // A keyless upstream (a local server) still gets a bearer value: the runner requires one.
      const apiKey = config.credential === undefined ? 'none' : deps.providerKeys[config.credential]
      return {
        kind: config.kind,
        chat: ({ request, signal, requestId }) =>
          callUpstream({
            family: openaiCompatible,
            operation: 'chat',
            body: { ...request, model: upstreamModel },
            baseUrl: config.baseUrl,
            apiKey,
            blobs: noBlobs,
            fetch: deps.fetch,
            timeoutMs: deps.timeoutMs,
            signal,
            requestId,
            onEvent: deps.onEvent,
          }),
      }
    }
    case 'confidential': {
      const confidential = createConfidentialUpstream(config, modelId, {
        fetch: deps.fetch,
        apiKey: config.credential === undefined ? undefined : deps.providerKeys[config.credential],
        onReceipt: deps.onReceipt,
        timeoutMs: deps.timeoutMs,
      })
      return {
        kind: config.kind,
        confidential,
        chat: ({ request, signal, payment }) => confidential.chat({ request, signal, payment }),
      }
    }
  }
}
