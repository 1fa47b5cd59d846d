/**
 * The OpenAI family: chat completions (streaming passed through byte for byte), embeddings, image
 * generation (results re-hosted in blob storage as `{ url }`), transcription (an audio URL or base64
 * file sent upstream as multipart/form-data) and speech (audio bytes → blob `{ url }`). The
 * operations are shared with the OpenAI-compatible family.
 *
 * @module
 */
import { isAudioUrl, transcriptionMaxBytes } from '../catalog/shapes.js'
import {
  decodeBase64File,
  failed,
  fetchMedia,
  jsonResult,
  type Media,
  maxMediaBytes,
  passJson,
  readJson,
  readLimited,
} from './http.js'
import type {
  Family,
  Operation,
  OperationContext,
  OutgoingCall,
  UpstreamResult,
} from './upstream.js'

/** Headers of a JSON request with a bearer key. */
export function bearerJson(ctx: OperationContext): Record<string, string> {
  return {
    authorization: `Bearer ${ctx.apiKey}`,
    'content-type': 'application/json',
    accept: 'application/json',
  }
}

/** A JSON POST to `<baseUrl><path>` with a bearer key. */
export function postJson(ctx: OperationContext, path: string, body: unknown): OutgoingCall {
  return {
    url: `${ctx.baseUrl}${path}`,
    init: { method: 'POST', headers: bearerJson(ctx), body: JSON.stringify(body) },
  }
}

/** Passes an SSE answer through untouched, or a JSON answer as JSON. */
export async function streamOrJson(answer: Response): Promise<UpstreamResult> {
  const type = answer.headers.get('content-type') ?? ''
  if (!type.toLowerCase().startsWith('text/event-stream')) return passJson(answer)
  return {
    status: 'ok',
    response: new Response(answer.body, {
      status: 200,
      headers: {
        'content-type': type,
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      },
    }),
  }
}

/** `POST /chat/completions`; `stream: true` answers are passed through as SSE. */
export const chat: Operation = {
  streams: (body) => body.stream === true,
  request: (body, ctx) => postJson(ctx, '/chat/completions', body),
  response: (answer) => streamOrJson(answer),
}

/** `POST /embeddings`. */
export const embeddings: Operation = {
  request: (body, ctx) => postJson(ctx, '/embeddings', body),
}

/** `GET /models` (the free open-model list). */
export const models: Operation = {
  request: (_body, ctx) =>
    new Request(`${ctx.baseUrl}/models`, {
      method: 'GET',
      headers: { authorization: `Bearer ${ctx.apiKey}`, accept: 'application/json' },
    }),
}

/** Stores media in the blob store; a failure result when it is too large. */
export async function storeMedia(
  ctx: OperationContext,
  bytes: Uint8Array,
  contentType: string,
): Promise<{ url: string } | undefined> {
  if (bytes.byteLength > maxMediaBytes) return undefined
  return ctx.blobs.put(bytes, contentType)
}

/** Downloads a provider-hosted media URL and re-hosts it in the blob store. */
export async function rehost(
  ctx: OperationContext,
  url: string,
): Promise<{ status: 'ok'; url: string; contentType: string } | ReturnType<typeof failed>> {
  const download = await fetchMedia(url, {
    signal: ctx.signal,
    allowInternalHosts: ctx.allowInternalHosts,
    resolveHost: ctx.resolveHost,
  })
  if (download.status === 'failed') return download
  const stored = await ctx.blobs.put(download.media.bytes, download.media.contentType)
  return { status: 'ok', url: stored.url, contentType: download.media.contentType }
}

/**
 * `POST /images/generations`. dall-e-3 is asked for base64 (no second download); gpt-image-1 always
 * answers base64; a `url` answer is downloaded. Every image is re-hosted: the answer's `data` holds
 * `{ url }` entries of the gateway's blob store.
 */
export const images: Operation = {
  request: (body, ctx) =>
    postJson(ctx, '/images/generations', {
      ...body,
      ...(body.model === 'dall-e-3' || body.model === 'dall-e-2'
        ? { response_format: 'b64_json' }
        : {}),
    }),
  async response(answer, ctx) {
    const read = await readJson(answer)
    if (read.status === 'failed') return read
    const data = read.value.data
    if (!Array.isArray(data) || data.length === 0) return failed('upstream answered no images')
    const out: { url: string; revised_prompt?: string }[] = []
    for (const item of data as { b64_json?: unknown; url?: unknown; revised_prompt?: unknown }[]) {
      let url: string
      if (typeof item.b64_json === 'string') {
        url = (
          await ctx.blobs.put(new Uint8Array(Buffer.from(item.b64_json, 'base64')), 'image/png')
        ).url
      } else if (typeof item.url === 'string') {
        const hosted = await rehost(ctx, item.url)
        if (hosted.status === 'failed') return hosted
        url = hosted.url
      } else {
        return failed('upstream image has neither b64_json nor url')
      }
      out.push(
        typeof item.revised_prompt === 'string'
          ? { url, revised_prompt: item.revised_prompt }
          : { url },
      )
    }
    return jsonResult({ created: read.value.created ?? Math.floor(Date.now() / 1000), data: out })
  },
}

const audioExtensions: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/webm': 'webm',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
}

function fileName(media: Media, url?: string): string {
  const type = media.contentType.split(';')[0]?.trim().toLowerCase() ?? ''
  const fromType = audioExtensions[type]
  if (fromType) return `audio.${fromType}`
  const fromUrl = url ? /\.([a-z0-9]{2,4})(?:$|\?)/i.exec(new URL(url).pathname)?.[1] : undefined
  return `audio.${fromUrl?.toLowerCase() ?? 'mp3'}`
}

/**
 * `POST /audio/transcriptions` as multipart/form-data: the `file` (downloaded once from its URL, or
 * decoded from base64) plus `model`, `language` and `response_format=json`.
 */
export const transcription: Operation = {
  async prepare(body, ctx) {
    const file = body.file as string
    let media: Media
    let name: string
    if (isAudioUrl(file)) {
      const download = await fetchMedia(file, {
        signal: ctx.signal,
        maxBytes: transcriptionMaxBytes,
        allowInternalHosts: ctx.allowInternalHosts,
        resolveHost: ctx.resolveHost,
      })
      if (download.status === 'failed') return download
      media = download.media
      name = fileName(media, file)
    } else {
      media = decodeBase64File(file)
      if (media.bytes.byteLength > transcriptionMaxBytes) return failed('audio file is too large')
      if (media.bytes.byteLength === 0) return failed('audio file is empty')
      name = fileName(media)
    }
    return { media, name }
  },
  request(body, ctx, prepared) {
    const { media, name } = prepared as { media: Media; name: string }
    const form = new FormData()
    form.append('file', new Blob([media.bytes], { type: media.contentType }), name)
    if (typeof body.model === 'string') form.append('model', body.model)
    if (typeof body.language === 'string') form.append('language', body.language)
    form.append('response_format', 'json')
    return new Request(`${ctx.baseUrl}/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.apiKey}`, accept: 'application/json' },
      body: form,
    })
  },
}

/** `POST /audio/speech` (mp3): the audio is stored and answered as `{ url, content_type }`. */
export const speech: Operation = {
  request: (body, ctx) => postJson(ctx, '/audio/speech', { ...body, response_format: 'mp3' }),
  async response(answer, ctx) {
    const bytes = await readLimited(answer, maxMediaBytes)
    if (!bytes) return failed('upstream audio is too large')
    if (bytes.byteLength === 0) return failed('upstream answered no audio')
    const contentType = answer.headers.get('content-type') ?? 'audio/mpeg'
    const stored = await storeMedia(ctx, bytes, contentType)
    if (!stored) return failed('upstream audio is too large')
    return jsonResult({ url: stored.url, content_type: contentType })
  },
}

/** The OpenAI family module. */
export const openai: Family = {
  id: 'openai',
  timeoutMs: 120_000,
  operations: { chat, embeddings, images, transcription, speech, models },
}
