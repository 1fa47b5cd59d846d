/**
 * The async job families, each with a paid status endpoint: Replicate (a prediction waited for up
 * to 60 s with `Prefer: wait`; one still running is answered with its id, to read with
 * `/v1/predictions/status`) and AssemblyAI (a transcript job submitted with `speech_models`
 * defaulting to universal-2, read with `/v1/result`). A job the provider reports failed is a failed
 * call (refunded).
 *
 * @module
 */
import { failed, jsonResult, readJson } from './http.js'
import { defined, getWithQuery, postJsonWith } from './kit.js'
import type { Family, OperationContext, UpstreamResult } from './upstream.js'

const predictionFields = [
  'id',
  'model',
  'version',
  'status',
  'input',
  'output',
  'error',
  'logs',
  'metrics',
  'created_at',
  'started_at',
  'completed_at',
] as const

/** A prediction without the provider's API links (they need the operator's key). */
async function predictionAnswer(answer: Response): Promise<UpstreamResult> {
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  if (read.value.status === 'failed' || read.value.status === 'canceled') {
    return failed(`upstream replicate prediction ${String(read.value.status)}`)
  }
  return jsonResult(
    Object.fromEntries(
      predictionFields.filter((f) => f in read.value).map((f) => [f, read.value[f]]),
    ),
  )
}

const bearer = (ctx: OperationContext) => ({ authorization: `Bearer ${ctx.apiKey}` })

/** The Replicate family. */
export const replicate: Family = {
  id: 'replicate',
  timeoutMs: 75_000,
  // A retried create could start a second prediction.
  attempts: 1,
  operations: {
    predict: {
      request: (body, ctx) =>
        postJsonWith(
          ctx,
          '/predictions',
          { version: body.version, input: body.input },
          { ...bearer(ctx), prefer: 'wait=60' },
        ),
      response: predictionAnswer,
    },
    status: {
      request: (body, ctx) =>
        getWithQuery(ctx, `/predictions/${encodeURIComponent(String(body.id))}`, {}, bearer(ctx)),
      response: predictionAnswer,
    },
  },
}

/** The AssemblyAI family (a raw key in `authorization`). */
export const assemblyai: Family = {
  id: 'assemblyai',
  timeoutMs: 30_000,
  attempts: 1,
  operations: {
    transcribe: {
      request: (body, ctx) =>
        postJsonWith(
          ctx,
          '/transcript',
          defined({
            audio_url: body.audio_url,
            speech_models: body.speech_models ?? ['universal-2'],
            language_code: body.language_code,
            speaker_labels: body.speaker_labels,
            punctuate: body.punctuate,
            format_text: body.format_text,
          }),
          { authorization: ctx.apiKey },
        ),
      async response(answer) {
        const read = await readJson(answer)
        if (read.status === 'failed') return read
        if (read.value.status === 'error') return failed('upstream assemblyai refused the job')
        return jsonResult({ id: read.value.id, status: read.value.status })
      },
    },
    result: {
      request: (body, ctx) =>
        getWithQuery(
          ctx,
          `/transcript/${encodeURIComponent(String(body.id))}`,
          {},
          {
            authorization: ctx.apiKey,
          },
        ),
    },
  },
}
