/**
 * The fal family: `POST https://fal.run/<model>` with `Authorization: Key <key>`. Image and audio
 * results hosted on fal's CDN are re-hosted in blob storage and answered as `{ url }`.
 *
 * @module
 */
import { failed, jsonResult, readJson } from './http.js'
import { rehost } from './openai.js'
import type { Family, Operation, OperationContext, UpstreamFailed } from './upstream.js'

const modelPattern = /^[a-z0-9][a-z0-9._-]*(?:\/[a-z0-9][a-z0-9._-]*){1,3}$/

function run(ctx: OperationContext, body: unknown): Request | UpstreamFailed {
  const model = ctx.params.model ?? ''
  if (!modelPattern.test(model)) return failed('fal model parameter is not a model slug')
  return new Request(`${ctx.baseUrl}/${model}`, {
    method: 'POST',
    headers: {
      authorization: `Key ${ctx.apiKey}`,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify(body),
  })
}

type FalFile = { url?: unknown; content_type?: unknown; width?: unknown; height?: unknown }

/** IMAGE-TIER models: `images[]` re-hosted as `{ url, width, height, content_type }`. */
export const image: Operation = {
  request: (body, ctx) => run(ctx, body),
  async response(answer, ctx) {
    const read = await readJson(answer)
    if (read.status === 'failed') return read
    const list = read.value.images
    if (!Array.isArray(list) || list.length === 0) return failed('upstream answered no images')
    const images: Record<string, unknown>[] = []
    for (const file of list as FalFile[]) {
      if (typeof file.url !== 'string') return failed('upstream image has no url')
      const hosted = await rehost(ctx, file.url)
      if (hosted.status === 'failed') return hosted
      images.push({
        url: hosted.url,
        content_type: hosted.contentType,
        ...(typeof file.width === 'number' ? { width: file.width } : {}),
        ...(typeof file.height === 'number' ? { height: file.height } : {}),
      })
    }
    const { seed, has_nsfw_concepts, prompt } = read.value
    return jsonResult({ images, seed, has_nsfw_concepts, prompt })
  },
}

/** TRANSCRIBE-URL (whisper): `{ audio_url }` → the transcript JSON as is. */
export const transcription: Operation = {
  request: (body, ctx) => run(ctx, { audio_url: body.audio_url, task: 'transcribe' }),
}

/** MUSIC (stable audio): `audio` re-hosted as `{ url, content_type }`. */
export const audio: Operation = {
  request: (body, ctx) => run(ctx, body),
  async response(answer, ctx) {
    const read = await readJson(answer)
    if (read.status === 'failed') return read
    const file = read.value.audio as FalFile | undefined
    const url = typeof file?.url === 'string' ? file.url : undefined
    if (!url) return failed('upstream answered no audio')
    const hosted = await rehost(ctx, url)
    if (hosted.status === 'failed') return hosted
    return jsonResult({ audio: { url: hosted.url, content_type: hosted.contentType } })
  },
}

/** The fal family module. */
export const fal: Family = {
  id: 'fal',
  timeoutMs: 180_000,
  operations: { image, transcription, audio },
}
