/**
 * Deterministic fakes of the providers that answer files or run jobs: ElevenLabs, Stability
 * (multipart in, image out), ScreenshotOne, PDFShift, the QR code API, Tinify (an upload answering a
 * `Location`, then the output), Replicate and AssemblyAI (jobs with a status read).
 *
 * @module
 */
import {
  bearer,
  body,
  digest,
  json,
  type StubHandler,
  type StubRequest,
  stubError,
  stubMedia,
} from './handlers.js'

/** A deterministic PDF. */
const pdf = new TextEncoder().encode('%PDF-1.4\n%stub\n%%EOF\n')

const file = (bytes: Uint8Array, type: string, headers: Record<string, string> = {}): Response =>
  new Response(bytes as Uint8Array<ArrayBuffer>, {
    status: 200,
    headers: { 'content-type': type, ...headers },
  })

/** ElevenLabs text to speech and sound generation (`xi-api-key`). */
export const elevenlabsStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('xi-api-key')) {
    return json({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } }, 401)
  }
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  if (/^\/text-to-speech\/[A-Za-z0-9]+$/.test(rest) || rest === '/sound-generation') {
    if (typeof input.text !== 'string') return json({ detail: 'text is required' }, 422)
    return file(stubMedia.mp3, 'audio/mpeg')
  }
  return stubError(404, 'not found')
}

/** Stability SD3 and search-and-replace (bearer, multipart, `accept: image/*`). */
export const stabilityStub: StubHandler = async (request, rest) => {
  if (!bearer(request)) return json({ name: 'unauthorized', errors: ['missing key'] }, 401)
  if (!(request.headers.get('content-type') ?? '').startsWith('multipart/form-data')) {
    return json({ name: 'bad_request', errors: ['multipart/form-data is required'] }, 400)
  }
  const form = await request.formData()
  if (typeof form.get('prompt') !== 'string') {
    return json({ name: 'bad_request', errors: ['prompt is required'] }, 400)
  }
  const edit = rest === '/stable-image/edit/search-and-replace'
  if (request.method !== 'POST' || (!edit && rest !== '/stable-image/generate/sd3')) {
    return stubError(404, 'not found')
  }
  if (edit && !(form.get('image') instanceof Blob)) {
    return json({ name: 'bad_request', errors: ['image is required'] }, 400)
  }
  return file(stubMedia.png, 'image/png', { seed: '42', 'finish-reason': 'SUCCESS' })
}

/** ScreenshotOne `GET /take` (`access_key` in the query). */
export const screenshotoneStub: StubHandler = async (request, rest) => {
  const q = new URL(request.url).searchParams
  if (!q.get('access_key'))
    return json({ is_successful: false, error_code: 'access_key_required' }, 400)
  if (request.method !== 'GET' || rest !== '/take' || !q.get('url'))
    return stubError(404, 'not found')
  return file(stubMedia.png, 'image/png')
}

/** PDFShift `POST /convert/pdf` (`X-API-Key`). */
export const pdfshiftStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-api-key')) return json({ success: false, error: 'No API key' }, 401)
  if (request.method !== 'POST' || rest !== '/convert/pdf') return stubError(404, 'not found')
  const input = await body(request)
  if (typeof input.source !== 'string') return json({ success: false, error: 'source' }, 400)
  return file(pdf, 'application/pdf')
}

/** The QR code API `GET /create-qr-code/` (no key). */
export const qrserverStub: StubHandler = async (request, rest) => {
  const q = new URL(request.url).searchParams
  if (request.method !== 'GET' || rest !== '/create-qr-code/' || !q.get('data')) {
    return new Response('bad request', { status: 400 })
  }
  return q.get('format') === 'svg'
    ? file(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'image/svg+xml')
    : file(stubMedia.png, 'image/png')
}

function basicUser(request: StubRequest): string | undefined {
  const value = request.headers.get('authorization') ?? ''
  if (!value.startsWith('Basic ')) return undefined
  return Buffer.from(value.slice(6), 'base64').toString('utf8')
}

/** Tinify: `POST /shrink` answers 201 with a `Location`; `GET`/`POST /output/<id>` the image. */
export const tinifyStub: StubHandler = async (request, rest, origin) => {
  const user = basicUser(request)
  if (!user?.startsWith('api:') || user.length <= 4) {
    return json({ error: 'Unauthorized', message: 'Credentials are invalid' }, 401)
  }
  if (request.method === 'POST' && rest === '/shrink') {
    const id = `out-${digest(request.headers.get('content-type'))}`
    return json(
      {
        input: { size: 2048, type: 'image/png' },
        output: { size: 1024, type: 'image/png', width: 8, height: 8, ratio: 0.5 },
      },
      201,
      { location: `${origin}/tinify/output/${id}` },
    )
  }
  if (/^\/output\/[a-z0-9-]+$/.test(rest)) {
    if (request.method === 'POST') {
      const resize = (await body(request)).resize as { width?: number; height?: number } | undefined
      if (!resize) return json({ error: 'BadRequest' }, 400)
      return file(stubMedia.png, 'image/png', {
        'image-width': String(resize.width ?? 8),
        'image-height': String(resize.height ?? 8),
      })
    }
    return file(stubMedia.png, 'image/png', { 'image-width': '8', 'image-height': '8' })
  }
  return stubError(404, 'not found')
}

/** Replicate predictions: created succeeded (as with `Prefer: wait`), read back by id. */
export const replicateStub: StubHandler = async (request, rest) => {
  if (!bearer(request)) return json({ title: 'Unauthenticated', status: 401 }, 401)
  const prediction = (id: string, input: unknown) => ({
    id,
    model: 'stub/model',
    version: 'stub',
    status: 'succeeded',
    input,
    output: [`https://replicate.delivery/stub/${id}.png`],
    error: null,
    created_at: '2026-11-20T00:00:00Z',
    completed_at: '2026-11-20T00:00:01Z',
    urls: { get: `https://api.replicate.com/v1/predictions/${id}` },
  })
  if (request.method === 'POST' && rest === '/predictions') {
    const input = await body(request)
    if (typeof input.version !== 'string') return json({ detail: 'version is required' }, 422)
    return json(prediction(digest(input).slice(0, 20), input.input), 201)
  }
  const read = /^\/predictions\/([a-z0-9]+)$/.exec(rest)
  if (request.method === 'GET' && read) return json(prediction(read[1] as string, {}))
  return stubError(404, 'not found')
}

/** AssemblyAI transcripts: submitted queued, read back completed (a raw key in `authorization`). */
export const assemblyaiStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('authorization')) {
    return json({ error: 'Authentication error, API token missing/invalid' }, 401)
  }
  if (request.method === 'POST' && rest === '/transcript') {
    const input = await body(request)
    if (typeof input.audio_url !== 'string') return json({ error: 'audio_url is required' }, 400)
    const id = digest(input)
    return json({ id: `${id.slice(0, 8)}-${id.slice(8, 12)}`, status: 'queued', ...input })
  }
  const read = /^\/transcript\/([A-Za-z0-9-]+)$/.exec(rest)
  if (request.method === 'GET' && read) {
    return json({ id: read[1], status: 'completed', text: `Stub transcript ${read[1]}` })
  }
  return stubError(404, 'not found')
}
