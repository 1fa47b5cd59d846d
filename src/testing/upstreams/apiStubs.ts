/**
 * Deterministic fakes of the JSON providers with their own auth and mapping: Judge0, Lob, DeepL,
 * Google Translate, Cohere, Exa, Serper, Jina Reader, Pushover, VirusTotal and Short.io.
 *
 * @module
 */
import {
  bearer,
  body,
  digest,
  json,
  type StubHandler,
  stubError,
  stubReply,
  vector,
} from './handlers.js'

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')

/** Judge0 CE (`x-rapidapi-key` and `x-rapidapi-host`); base64 in and out. */
export const judge0Stub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-rapidapi-key') || !request.headers.get('x-rapidapi-host')) {
    return json({ message: 'You are not subscribed to this API.' }, 403)
  }
  if (request.method === 'GET' && rest === '/languages') {
    return json([
      { id: 63, name: 'JavaScript (Node.js 12.14.0)' },
      { id: 71, name: 'Python (3.8.1)' },
    ])
  }
  if (request.method === 'POST' && rest === '/submissions') {
    const input = await body(request)
    const source = Buffer.from(String(input.source_code ?? ''), 'base64').toString('utf8')
    return json({
      token: digest(input),
      status: { id: 3, description: 'Accepted' },
      stdout: b64(`ran ${source.length} characters\n`),
      stderr: null,
      compile_output: null,
      message: null,
      time: '0.01',
      memory: 3000,
    })
  }
  return stubError(404, 'not found')
}

/** Lob postcards, letters, US verifications (Basic `key:`). */
export const lobStub: StubHandler = async (request, rest) => {
  const auth = request.headers.get('authorization') ?? ''
  const user = auth.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString() : ''
  if (!user.endsWith(':') || user.length < 2) {
    return json({ error: { message: 'Your API key is not valid.', status_code: 401 } }, 401)
  }
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  const id = digest(request.headers.get('idempotency-key') ?? input)
  if (rest === '/postcards') return json({ id: `psc_${id}`, object: 'postcard', to: input.to })
  if (rest === '/letters') return json({ id: `ltr_${id}`, object: 'letter', to: input.to })
  if (rest === '/us_verifications') {
    return json({
      id: `us_ver_${id}`,
      deliverability: 'deliverable',
      primary_line: String(input.primary_line ?? '').toUpperCase(),
    })
  }
  return stubError(404, 'not found')
}

/** DeepL `POST /translate` (`DeepL-Auth-Key`). */
export const deeplStub: StubHandler = async (request, rest) => {
  if (!(request.headers.get('authorization') ?? '').startsWith('DeepL-Auth-Key ')) {
    return json({ message: 'Forbidden' }, 403)
  }
  if (request.method !== 'POST' || rest !== '/translate') return stubError(404, 'not found')
  const input = await body(request)
  if (!Array.isArray(input.text)) return json({ message: 'text must be an array' }, 400)
  return json({
    translations: input.text.map((t) => ({
      detected_source_language: 'EN',
      text: `[${String(input.target_lang)}] ${String(t)}`,
    })),
  })
}

/** Google Translate v2 translate and detect (`key` in the query). */
export const googleTranslateStub: StubHandler = async (request, rest) => {
  if (!new URL(request.url).searchParams.get('key')) {
    return json({ error: { code: 403, message: 'The request is missing a valid API key.' } }, 403)
  }
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  const q = Array.isArray(input.q) ? input.q : [input.q]
  if (rest === '') {
    return json({
      data: {
        translations: q.map((t) => ({ translatedText: `[${String(input.target)}] ${String(t)}` })),
      },
    })
  }
  if (rest === '/detect') {
    return json({ data: { detections: q.map(() => [{ language: 'fr', confidence: 1 }]) } })
  }
  return stubError(404, 'not found')
}

/** Cohere v2 chat, embed, rerank (bearer). */
export const cohereStub: StubHandler = async (request, rest) => {
  if (!bearer(request)) return json({ message: 'invalid api token' }, 401)
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  if (rest === '/chat') {
    const messages = (input.messages as { content?: string }[] | undefined) ?? []
    const text = stubReply(String(messages.at(-1)?.content ?? '').slice(0, 200))
    return json({
      id: digest(input),
      finish_reason: 'COMPLETE',
      message: { role: 'assistant', content: [{ type: 'text', text }] },
    })
  }
  if (rest === '/embed') {
    const texts = (input.texts as string[] | undefined) ?? []
    return json({ id: digest(input), embeddings: { float: texts.map((t) => vector(t)) }, texts })
  }
  if (rest === '/rerank') {
    const documents = (input.documents as string[] | undefined) ?? []
    const top = Number(input.top_n ?? documents.length)
    return json({
      id: digest(input),
      results: documents
        .slice(0, top)
        .map((_, index) => ({ index, relevance_score: 1 / (index + 1) })),
    })
  }
  return stubError(404, 'not found')
}

/** Exa search and contents (`x-api-key`). */
export const exaStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-api-key')) return json({ error: 'Missing API key' }, 401)
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  if (rest === '/search') {
    return json({
      requestId: digest(input),
      results: [{ title: `Result for ${String(input.query)}`, url: 'https://example.com/exa/1' }],
    })
  }
  if (rest === '/contents') {
    const urls = (input.urls as string[] | undefined) ?? []
    return json({
      requestId: digest(input),
      results: urls.map((url) => ({ url, text: `Text of ${url}` })),
    })
  }
  return stubError(404, 'not found')
}

/** Serper search and images (`x-api-key`). */
export const serperStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-api-key')) return json({ message: 'Unauthorized.' }, 403)
  if (request.method !== 'POST' || (rest !== '/search' && rest !== '/images')) {
    return stubError(404, 'not found')
  }
  const input = await body(request)
  const key = rest === '/images' ? 'images' : 'organic'
  return json({
    searchParameters: { q: input.q, type: rest.slice(1) },
    [key]: [{ title: `Result for ${String(input.q)}`, link: 'https://example.com/serper/1' }],
  })
}

/** Jina Reader `GET /<url>` (bearer; JSON with `accept: application/json`). */
export const jinaStub: StubHandler = async (request, rest) => {
  if (!bearer(request)) return json({ code: 401, message: 'Invalid API key' }, 401)
  const url = rest.slice(1)
  if (request.method !== 'GET' || !/^https?:\/\//.test(url)) return json({ code: 400 }, 400)
  return json({ code: 200, status: 20000, data: { title: 'Stub page', url, content: `# ${url}` } })
}

/** Pushover `POST /messages.json` (the app token in the body). */
export const pushoverStub: StubHandler = async (request, rest) => {
  if (request.method !== 'POST' || rest !== '/messages.json') return stubError(404, 'not found')
  const input = await body(request)
  if (!input.token)
    return json({ token: 'invalid', errors: ['application token is invalid'], status: 0 }, 400)
  if (!input.user || !input.message) return json({ errors: ['user and message'], status: 0 }, 400)
  return json({ status: 1, request: digest(input) })
}

/** VirusTotal v3 url and file reports, URL submission (`x-apikey`). */
export const virustotalStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-apikey')) {
    return json({ error: { code: 'WrongCredentialsError', message: 'Wrong API key' } }, 401)
  }
  const stats = { harmless: 70, malicious: 0, suspicious: 0, undetected: 20, timeout: 0 }
  const url = /^\/urls\/([A-Za-z0-9_-]+)$/.exec(rest)
  if (request.method === 'GET' && url) {
    const decoded = Buffer.from(url[1] as string, 'base64url').toString('utf8')
    if (decoded.includes('unknown')) return json({ error: { code: 'NotFoundError' } }, 404)
    return json({
      data: {
        id: url[1],
        type: 'url',
        attributes: { url: decoded, reputation: 0, last_analysis_stats: stats, title: 'Stub' },
      },
    })
  }
  const hash = /^\/files\/([0-9a-f]+)$/.exec(rest)
  if (request.method === 'GET' && hash) {
    return json({
      data: {
        id: hash[1],
        type: 'file',
        attributes: { sha256: hash[1], meaningful_name: 'stub.exe', last_analysis_stats: stats },
      },
    })
  }
  if (request.method === 'POST' && rest === '/urls') {
    return json({ data: { type: 'analysis', id: `u-${digest(rest)}` } })
  }
  return stubError(404, 'not found')
}

/** Short.io `POST /links/public` (a raw key in `authorization`). */
export const shortioStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('authorization')) return json({ error: 'Unauthorized' }, 401)
  if (request.method !== 'POST' || rest !== '/links/public') return stubError(404, 'not found')
  const input = await body(request)
  if (!input.domain || !input.originalURL) return json({ error: 'domain and originalURL' }, 400)
  const id = digest(input).slice(0, 10)
  return json({
    idString: `lnk_${id}`,
    shortURL: `https://${String(input.domain)}/${String(input.path ?? id)}`,
    originalURL: input.originalURL,
  })
}
