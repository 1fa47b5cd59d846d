/**
 * Rows of the endpoint suite for the web, translation, compute, messaging, security and utility services (the catalog's
 * `servicesTools.ts`), and Resend's batch route: the exact upstream request(s) nock expects (URL, method,
 * where the key goes, body or query mapping), the answer, what the buyer gets. Test support only.
 *
 * @module
 */
import { expect } from 'vitest'
import { b64, type Expectation, pdf, png, type RowContext, rowKit, rows } from './kit.js'

/** The rows, by gateway path. */
export function toolsRows(context: RowContext): Record<string, Expectation> {
  const { bearer, chat, file, key, post } = rowKit(context)
  return {
    '/resend/v1/emails/batch': post(
      'https://api.resend.com',
      '/emails/batch',
      { ...bearer('RESEND_API_KEY'), 'idempotency-key': /^\w{32,}$/ },
      (b) => b.emails,
      { data: [{ id: 'e1' }, { id: 'e2' }] },
    ),
    '/judge0/v1/submissions': rows(
      (b) => [
        {
          origin: 'https://judge0-ce.p.rapidapi.com',
          method: 'POST',
          path: '/submissions',
          query: { base64_encoded: 'true', wait: 'true' },
          headers: {
            'x-rapidapi-key': key('RAPIDAPI_KEY'),
            'x-rapidapi-host': 'judge0-ce.p.rapidapi.com',
          },
          body: { source_code: b64(String(b.source_code)), language_id: b.language_id },
          reply: [
            200,
            {
              token: 't1',
              status: { id: 3, description: 'Accepted' },
              stdout: b64('hello\n'),
              stderr: null,
              compile_output: null,
              message: null,
              time: '0.01',
              memory: 3000,
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          token: 't1',
          status: { id: 3, description: 'Accepted' },
          stdout: 'hello\n',
          stderr: null,
          compile_output: null,
          message: null,
          time: '0.01',
          memory: 3000,
        }),
    ),
    '/judge0/v1/languages': rows(
      () => [
        {
          origin: 'https://judge0-ce.p.rapidapi.com',
          method: 'GET',
          path: '/languages',
          headers: { 'x-rapidapi-key': key('RAPIDAPI_KEY') },
          reply: [200, [{ id: 71, name: 'Python (3.8.1)' }]],
        },
      ],
      (out) => expect(out).toEqual({ languages: [{ id: 71, name: 'Python (3.8.1)' }] }),
    ),
    ...Object.fromEntries(
      (
        [
          ['/lob/v1/postcards', '/v1/postcards'],
          ['/lob/v1/letters', '/v1/letters'],
          ['/lob/v1/verify', '/v1/us_verifications'],
        ] as const
      ).map(([path, upstream]) => [
        path,
        post(
          'https://api.lob.com',
          upstream,
          {
            authorization: `Basic ${Buffer.from(`${key('LOB_API_KEY')}:`).toString('base64')}`,
            'idempotency-key': /^\w{32,}$/,
          },
          (b) => b,
          { id: `lob_${upstream.slice(4)}` },
        ),
      ]),
    ),
    '/deepl/v1/translate': post(
      'https://api-free.deepl.com',
      '/v2/translate',
      { authorization: `DeepL-Auth-Key ${key('DEEPL_API_KEY')}` },
      (b) => ({ text: [b.text], target_lang: b.target_lang }),
      { translations: [{ text: 'Hallo, Welt' }] },
    ),
    '/exa/v1/search': post(
      'https://api.exa.ai',
      '/search',
      { 'x-api-key': key('EXA_API_KEY') },
      (b) => b,
    ),
    '/exa/v1/contents': post(
      'https://api.exa.ai',
      '/contents',
      { 'x-api-key': key('EXA_API_KEY') },
      (b) => ({ urls: b.urls, text: true }),
    ),
    '/jina/v1/read': rows(
      (b) => [
        {
          origin: 'https://r.jina.ai',
          method: 'GET',
          path: `/${String(b.url)}`,
          headers: { ...bearer('JINA_API_KEY'), accept: 'application/json' },
          reply: [200, { code: 200, data: { title: 'Example', content: '# Example' } }],
        },
      ],
      (out) => expect(out).toEqual({ code: 200, data: { title: 'Example', content: '# Example' } }),
    ),
    '/serper/v1/search': post(
      'https://google.serper.dev',
      '/search',
      { 'x-api-key': key('SERPER_API_KEY') },
      (b) => b,
    ),
    '/serper/v1/images': post(
      'https://google.serper.dev',
      '/images',
      { 'x-api-key': key('SERPER_API_KEY') },
      (b) => b,
    ),
    '/screenshot/v1/capture': file(
      (b) => [
        {
          origin: 'https://api.screenshotone.com',
          method: 'GET',
          path: '/take',
          query: {
            access_key: key('SCREENSHOTONE_API_KEY'),
            url: String(b.url),
            format: 'png',
            viewport_width: String(b.viewport_width),
            viewport_height: String(b.viewport_height),
          },
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      png,
      'image/png',
    ),
    '/pdfshift/v1/convert': file(
      (b) => [
        {
          origin: 'https://api.pdfshift.io',
          method: 'POST',
          path: '/v3/convert/pdf',
          headers: { 'x-api-key': key('PDFSHIFT_API_KEY') },
          body: b,
          reply: [200, pdf, { 'content-type': 'application/pdf' }],
        },
      ],
      pdf,
      'application/pdf',
    ),
    '/qrcode/v1/generate': file(
      (b) => [
        {
          origin: 'https://api.qrserver.com',
          method: 'GET',
          path: '/v1/create-qr-code/',
          query: { data: String(b.data), size: `${b.size}x${b.size}`, format: 'png' },
          absent: ['authorization'],
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      png,
      'image/png',
    ),
    '/translate/v1/translate': rows(
      (b) => [
        {
          origin: 'https://translation.googleapis.com',
          method: 'POST',
          path: '/language/translate/v2',
          query: { key: key('GOOGLE_TRANSLATE_API_KEY') },
          body: { q: b.q, target: b.target, format: 'text' },
          reply: [200, { data: { translations: [{ translatedText: 'Hallo' }] } }],
        },
      ],
      (out) => expect(out).toEqual({ data: { translations: [{ translatedText: 'Hallo' }] } }),
    ),
    '/translate/v1/detect': rows(
      (b) => [
        {
          origin: 'https://translation.googleapis.com',
          method: 'POST',
          path: '/language/translate/v2/detect',
          query: { key: key('GOOGLE_TRANSLATE_API_KEY') },
          body: { q: b.q },
          reply: [200, { data: { detections: [[{ language: 'fr' }]] } }],
        },
      ],
      (out) => expect(out).toEqual({ data: { detections: [[{ language: 'fr' }]] } }),
    ),
    '/pushover/v1/push': post(
      'https://api.pushover.net',
      '/1/messages.json',
      {},
      (b) => ({ ...b, token: key('PUSHOVER_API_KEY') }),
      { status: 1, request: 'r1' },
      { status: 'sent', request: 'r1' },
    ),
    '/mistral/v1/chat/completions': chat(
      'https://api.mistral.ai',
      '/v1/chat/completions',
      'MISTRAL_API_KEY',
      'mistral-small-latest',
    ),
    '/mistral/v1/embeddings': post(
      'https://api.mistral.ai',
      '/v1/embeddings',
      bearer('MISTRAL_API_KEY'),
      (b) => ({ model: 'mistral-embed', ...b }),
    ),
    '/cohere/v1/chat': post(
      'https://api.cohere.com',
      '/v2/chat',
      bearer('COHERE_API_KEY'),
      (b) => ({ model: 'command-a-03-2025', ...b, stream: false }),
    ),
    '/cohere/v1/embed': post(
      'https://api.cohere.com',
      '/v2/embed',
      bearer('COHERE_API_KEY'),
      (b) => ({
        model: 'embed-v4.0',
        texts: b.texts,
        input_type: b.input_type,
        embedding_types: ['float'],
      }),
    ),
    '/cohere/v1/rerank': post(
      'https://api.cohere.com',
      '/v2/rerank',
      bearer('COHERE_API_KEY'),
      (b) => ({ model: 'rerank-v3.5', ...b }),
    ),
    '/virustotal/v1/scan': rows(
      (b) => [
        {
          origin: 'https://www.virustotal.com',
          method: 'GET',
          path: `/api/v3/urls/${Buffer.from(String(b.url)).toString('base64url')}`,
          headers: { 'x-apikey': key('VIRUSTOTAL_API_KEY') },
          reply: [
            200,
            {
              data: {
                id: 'u1',
                attributes: { url: b.url, reputation: 0, last_analysis_stats: { malicious: 0 } },
              },
            },
          ],
        },
      ],
      (out, b) =>
        expect(out).toEqual({
          status: 'found',
          type: 'url',
          id: 'u1',
          reputation: 0,
          last_analysis_stats: { malicious: 0 },
          url: b.url,
        }),
    ),
    '/shortio/v1/shorten': post(
      'https://api.short.io',
      '/links/public',
      { authorization: key('SHORTIO_API_KEY') },
      (b) => ({ domain: 'short.gy', originalURL: b.url }),
      { idString: 'l1', shortURL: 'https://short.gy/a', originalURL: 'u', extra: 1 },
      { short_url: 'https://short.gy/a', original_url: 'u', id: 'l1' },
    ),
    '/tinify/v1/compress': tinify(undefined),
    '/tinify/v1/resize': tinify({ method: 'fit', width: 150, height: 100 }),
  }

  function tinify(resize: Record<string, unknown> | undefined): Expectation {
    const auth = {
      authorization: `Basic ${Buffer.from(`api:${key('TINIFY_API_KEY')}`).toString('base64')}`,
    }
    return file(
      (b) => [
        {
          origin: 'https://api.tinify.com',
          method: 'POST',
          path: '/shrink',
          headers: auth,
          body: { source: { url: b.image } },
          reply: [
            201,
            { input: { size: 2048 }, output: { size: 1024, ratio: 0.5 } },
            { location: 'https://api.tinify.com/output/abc' },
          ],
        },
        resize
          ? {
              origin: 'https://api.tinify.com',
              method: 'POST',
              path: '/output/abc',
              headers: auth,
              body: { resize },
              reply: [200, png, { 'content-type': 'image/png', 'image-width': '150' }],
            }
          : {
              origin: 'https://api.tinify.com',
              method: 'GET',
              path: '/output/abc',
              headers: auth,
              reply: [200, png, { 'content-type': 'image/png', 'image-width': '8' }],
            },
      ],
      png,
      'image/png',
      resize
        ? { input_size: 2048, width: 150 }
        : { input_size: 2048, output_size: 1024, ratio: 0.5, width: 8 },
    )
  }
}
