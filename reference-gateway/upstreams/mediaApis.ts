/**
 * The families whose answer is a file, stored in blob storage and answered as `{ url }`:
 * ElevenLabs (speech and sound effects), Stability (JSON → multipart upload, `accept: image/*`),
 * ScreenshotOne and the QR code API (query-string GETs), PDFShift, and Tinify (two hops: the upload
 * answers a `Location`, which is fetched — or posted a resize — for the result; the `Location` must
 * be on the provider's own origin, so the key is never sent elsewhere).
 *
 * @module
 */

import { isAudioUrl } from '../catalog/shapes.js'
import { imageMaxBytes } from '../catalog/shapesAi.js'
import { failed, type Media, readJson } from './http.js'
import { blobAnswer, defined, getWithQuery, mediaInput, postJsonWith } from './kit.js'
import type { Family, Operation, OperationContext, UpstreamResult } from './upstream.js'

const voicePattern = /^[A-Za-z0-9]{8,40}$/

/** ElevenLabs text to speech (`{voiceId}` from the path) and sound generation, mp3 out. */
export const elevenlabs: Family = {
  id: 'elevenlabs',
  timeoutMs: 60_000,
  operations: {
    speech: {
      request(body, ctx) {
        const voice = ctx.params.voiceId ?? ''
        if (!voicePattern.test(voice)) return failed('voice id is not a voice id')
        return postJsonWith(
          ctx,
          `/text-to-speech/${voice}?output_format=mp3_44100_128`,
          defined({
            text: body.text,
            model_id: body.model_id,
            language_code: body.language_code,
            voice_settings: body.voice_settings,
            seed: body.seed,
          }),
          { 'xi-api-key': ctx.apiKey, accept: 'audio/mpeg' },
        )
      },
      response: (answer, ctx) => blobAnswer(answer, ctx, 'audio/mpeg'),
    },
    sound: {
      request: (body, ctx) =>
        postJsonWith(
          ctx,
          '/sound-generation?output_format=mp3_44100_128',
          defined({
            text: body.text,
            duration_seconds: body.duration_seconds,
            prompt_influence: body.prompt_influence,
            loop: body.loop,
          }),
          { 'xi-api-key': ctx.apiKey, accept: 'audio/mpeg' },
        ),
      response: (answer, ctx) => blobAnswer(answer, ctx, 'audio/mpeg'),
    },
  },
}

function stabilityForm(
  ctx: OperationContext,
  path: string,
  fields: Readonly<Record<string, unknown>>,
  image?: Media,
): Request {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined) form.append(name, String(value))
  }
  if (image) {
    const type = image.contentType.split(';')[0] ?? 'image/png'
    const extension = type.split('/')[1] ?? 'png'
    form.append('image', new Blob([image.bytes], { type }), `image.${extension}`)
  }
  return new Request(`${ctx.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.apiKey}`, accept: 'image/*' },
    body: form,
  })
}

/** Stability's answer: the image, with the seed and finish reason it reports in headers. */
function stabilityAnswer(answer: Response, ctx: OperationContext): Promise<UpstreamResult> {
  const reason = answer.headers.get('finish-reason')
  if (reason === 'CONTENT_FILTERED') {
    void answer.body?.cancel().catch(() => {})
    return Promise.resolve(failed('upstream stability filtered the content'))
  }
  const seed = Number(answer.headers.get('seed') ?? Number.NaN)
  return blobAnswer(answer, ctx, 'image/png', {
    ...(Number.isFinite(seed) ? { seed } : {}),
    ...(reason ? { finish_reason: reason } : {}),
  })
}

/** Stability image generation (SD3) and search-and-replace, multipart upstream. */
export const stability: Family = {
  id: 'stability',
  timeoutMs: 90_000,
  operations: {
    generate: {
      request: (body, ctx) =>
        stabilityForm(ctx, '/stable-image/generate/sd3', {
          prompt: body.prompt,
          model: body.model,
          aspect_ratio: body.aspect_ratio,
          negative_prompt: body.negative_prompt,
          seed: body.seed,
          output_format: body.output_format ?? 'png',
        }),
      response: stabilityAnswer,
    },
    edit: {
      prepare: (body, ctx) => mediaInput(String(body.image), ctx, imageMaxBytes),
      request: (body, ctx, prepared) =>
        stabilityForm(
          ctx,
          '/stable-image/edit/search-and-replace',
          {
            prompt: body.prompt,
            search_prompt: body.search_prompt,
            negative_prompt: body.negative_prompt,
            seed: body.seed,
            output_format: body.output_format ?? 'png',
          },
          prepared as Media,
        ),
      response: stabilityAnswer,
    },
  },
}

/** ScreenshotOne: `GET /take?access_key=…&url=…`, the image stored. */
export const screenshotone: Family = {
  id: 'screenshotone',
  timeoutMs: 60_000,
  operations: {
    capture: {
      request: (b, ctx) =>
        getWithQuery(
          ctx,
          '/take',
          {
            access_key: ctx.apiKey,
            url: String(b.url),
            format: String(b.format ?? 'png'),
            full_page: b.full_page as boolean | undefined,
            viewport_width: b.viewport_width as number | undefined,
            viewport_height: b.viewport_height as number | undefined,
            device_scale_factor: b.device_scale_factor as number | undefined,
            block_ads: b.block_ads as boolean | undefined,
            delay: b.delay as number | undefined,
          },
          { accept: 'image/*' },
        ),
      response: (answer, ctx) => blobAnswer(answer, ctx, 'image/png'),
    },
  },
}

/** PDFShift: `POST /convert/pdf` with `X-API-Key`, the PDF stored. */
export const pdfshift: Family = {
  id: 'pdfshift',
  timeoutMs: 60_000,
  operations: {
    convert: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          '/convert/pdf',
          defined({
            source: b.source,
            landscape: b.landscape,
            format: b.format,
            use_print: b.use_print,
          }),
          { 'x-api-key': ctx.apiKey, accept: 'application/pdf' },
        ),
      response: (answer, ctx) => blobAnswer(answer, ctx, 'application/pdf'),
    },
  },
}

/** The QR code API (no key): `GET /create-qr-code/?data=…`, the image stored. */
export const qrserver: Family = {
  id: 'qrserver',
  timeoutMs: 10_000,
  keyless: true,
  operations: {
    generate: {
      request: (b, ctx) => {
        const size = (b.size as number | undefined) ?? 200
        return getWithQuery(
          ctx,
          '/create-qr-code/',
          {
            data: String(b.data),
            size: `${size}x${size}`,
            format: String(b.format ?? 'png'),
            ecc: b.ecc as string | undefined,
            color: b.color as string | undefined,
            bgcolor: b.bgcolor as string | undefined,
            margin: b.margin as number | undefined,
          },
          { accept: 'image/*' },
        )
      },
      response: (answer, ctx) => blobAnswer(answer, ctx, 'image/png'),
    },
  },
}

const basic = (ctx: OperationContext) =>
  `Basic ${Buffer.from(`api:${ctx.apiKey}`).toString('base64')}`

/** The upload of the first hop: a URL source as JSON, base64 as the image bytes. */
function shrink(body: Record<string, unknown>, ctx: OperationContext, prepared: unknown): Request {
  const image = String(body.image)
  const headers = { authorization: basic(ctx), accept: 'application/json' }
  if (isAudioUrl(image)) {
    return new Request(`${ctx.baseUrl}/shrink`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ source: { url: image } }),
    })
  }
  const media = prepared as Media
  return new Request(`${ctx.baseUrl}/shrink`, {
    method: 'POST',
    headers: { ...headers, 'content-type': media.contentType },
    body: media.bytes,
  })
}

/** Second hop: the `Location` (same origin only) fetched, or posted a resize; the result stored. */
async function output(
  answer: Response,
  ctx: OperationContext,
  resize: Record<string, unknown> | undefined,
): Promise<UpstreamResult> {
  const location = answer.headers.get('location')
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  let target: URL
  try {
    target = new URL(location ?? '', ctx.baseUrl)
  } catch {
    return failed('upstream tinify answered no usable Location')
  }
  if (location === null || target.origin !== new URL(ctx.baseUrl).origin) {
    return failed('upstream tinify answered a Location outside its own origin')
  }
  const second = await ctx.fetch(
    new Request(target, {
      method: resize ? 'POST' : 'GET',
      headers: {
        authorization: basic(ctx),
        ...(resize ? { 'content-type': 'application/json' } : {}),
      },
      ...(resize ? { body: JSON.stringify({ resize }) } : {}),
      signal: ctx.signal,
    }),
  )
  if (second.status < 200 || second.status > 299) {
    await second.body?.cancel().catch(() => {})
    return failed(`upstream tinify output answered ${second.status}`, second.status >= 500)
  }
  const input = read.value.input as { size?: unknown } | undefined
  const out = read.value.output as { size?: unknown; ratio?: unknown } | undefined
  const width = Number(second.headers.get('image-width') ?? Number.NaN)
  const height = Number(second.headers.get('image-height') ?? Number.NaN)
  return blobAnswer(second, ctx, 'image/png', {
    input_size: input?.size,
    ...(resize ? {} : { output_size: out?.size, ratio: out?.ratio }),
    ...(Number.isFinite(width) ? { width } : {}),
    ...(Number.isFinite(height) ? { height } : {}),
  })
}

const prepareImage: Operation['prepare'] = async (body, ctx) => {
  const image = String(body.image)
  if (isAudioUrl(image)) return undefined
  return mediaInput(image, ctx, imageMaxBytes)
}

/** Tinify (TinyPNG): compress, and compress then resize, in two hops. */
export const tinify: Family = {
  id: 'tinify',
  timeoutMs: 60_000,
  operations: {
    compress: {
      prepare: prepareImage,
      request: shrink,
      response: (answer, ctx) => output(answer, ctx, undefined),
    },
    resize: {
      prepare: prepareImage,
      request: shrink,
      response: (answer, ctx, body) =>
        output(
          answer,
          ctx,
          defined({ method: body.method, width: body.width, height: body.height }),
        ),
    },
  },
}
