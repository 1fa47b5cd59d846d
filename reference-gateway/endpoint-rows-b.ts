/**
 * Rows of the endpoint suite for DeepL through Tinify: the exact upstream request(s) nock expects
 * (URL, method, where the key goes, body or query mapping), the answer, what the buyer gets. Test
 * support only.
 *
 * @module
 */
import { expect } from 'vitest'
import { type Expectation, pdf, png, type RowContext, rowKit, rows } from './endpoint-rows-kit.js'

/** The rows, by gateway path. */
export function rowsDeeplToTinify(context: RowContext): Record<string, Expectation> {
  const { bearer, post, get, file, chat, key } = rowKit(context)
  return {
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
    '/replicate/v1/predictions': post(
      'https://api.replicate.com',
      '/v1/predictions',
      { ...bearer('REPLICATE_API_KEY'), prefer: 'wait=60' },
      (b) => ({ version: b.version, input: b.input }),
      {
        id: 'p1',
        status: 'succeeded',
        output: ['o'],
        urls: { get: 'https://api.replicate.com/x' },
      },
      { id: 'p1', status: 'succeeded', output: ['o'] },
    ),
    '/replicate/v1/predictions/status': rows(
      (b) => [
        {
          origin: 'https://api.replicate.com',
          method: 'GET',
          path: `/v1/predictions/${String(b.id)}`,
          headers: bearer('REPLICATE_API_KEY'),
          reply: [200, { id: b.id, status: 'processing', urls: {} }],
        },
      ],
      (out, b) => expect(out).toEqual({ id: b.id, status: 'processing' }),
    ),
    '/stability/v1/generate': file(
      (b) => [
        {
          origin: 'https://api.stability.ai',
          method: 'POST',
          path: '/v2beta/stable-image/generate/sd3',
          headers: { ...bearer('STABILITY_API_KEY'), accept: 'image/*' },
          form: (f) =>
            f.get('prompt') === b.prompt &&
            f.get('aspect_ratio') === b.aspect_ratio &&
            f.get('output_format') === 'png',
          reply: [200, png, { 'content-type': 'image/png', seed: '7' }],
        },
      ],
      png,
      'image/png',
      { seed: 7 },
    ),
    '/stability/v1/edit': file(
      (b) => [
        {
          origin: 'https://example.com',
          method: 'GET',
          path: '/images/dog.png',
          download: true,
          absent: ['authorization'],
          reply: [200, png, { 'content-type': 'image/png' }],
        },
        {
          origin: 'https://api.stability.ai',
          method: 'POST',
          path: '/v2beta/stable-image/edit/search-and-replace',
          headers: { ...bearer('STABILITY_API_KEY'), accept: 'image/*' },
          form: async (f) =>
            f.get('prompt') === b.prompt &&
            f.get('search_prompt') === b.search_prompt &&
            Buffer.from(await (f.get('image') as File).arrayBuffer()).equals(png),
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      png,
      'image/png',
    ),
    '/assemblyai/v1/transcribe': post(
      'https://api.assemblyai.com',
      '/v2/transcript',
      { authorization: key('ASSEMBLYAI_API_KEY') },
      (b) => ({ audio_url: b.audio_url, speech_models: ['universal-2'] }),
      { id: 't1', status: 'queued', audio_url: 'x' },
      { id: 't1', status: 'queued' },
    ),
    '/assemblyai/v1/result': rows(
      (b) => [
        {
          origin: 'https://api.assemblyai.com',
          method: 'GET',
          path: `/v2/transcript/${String(b.id)}`,
          headers: { authorization: key('ASSEMBLYAI_API_KEY') },
          reply: [200, { id: b.id, status: 'completed', text: 'hello' }],
        },
      ],
      (out, b) => expect(out).toEqual({ id: b.id, status: 'completed', text: 'hello' }),
    ),
    '/hunter/v1/search': get('https://api.hunter.io', '/v2/domain-search', (b) => ({
      domain: String(b.domain),
      limit: String(b.limit),
      api_key: key('HUNTER_API_KEY'),
    })),
    '/hunter/v1/verify': get('https://api.hunter.io', '/v2/email-verifier', (b) => ({
      email: String(b.email),
      api_key: key('HUNTER_API_KEY'),
    })),
    '/ipinfo/v1/lookup': get('https://ipinfo.io', '/8.8.8.8/json', () => ({
      token: key('IPINFO_API_KEY'),
    })),
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
    '/serpapi/v1/search': get('https://serpapi.com', '/search.json', (b) => ({
      engine: 'google',
      q: String(b.q),
      num: String(b.num),
      api_key: key('SERPAPI_API_KEY'),
    })),
    '/serpapi/v1/flights': get('https://serpapi.com', '/search.json', (b) => ({
      engine: 'google_flights',
      departure_id: String(b.departure_id),
      arrival_id: String(b.arrival_id),
      outbound_date: String(b.outbound_date),
      return_date: String(b.return_date),
      type: '1',
      api_key: key('SERPAPI_API_KEY'),
    })),
    '/serpapi/v1/locations': rows(
      (b) => [
        {
          origin: 'https://serpapi.com',
          method: 'GET',
          path: '/locations.json',
          query: { q: String(b.q), limit: String(b.limit) },
          reply: [200, [{ name: 'Austin' }]],
        },
      ],
      (out) => expect(out).toEqual({ locations: [{ name: 'Austin' }] }),
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
    '/exchangerate/v1/rates': rows(
      (b) => [
        {
          origin: 'https://v6.exchangerate-api.com',
          method: 'GET',
          path: `/v6/${key('EXCHANGERATE_API_KEY')}/latest/${String(b.base)}`,
          reply: [
            200,
            {
              result: 'success',
              base_code: 'USD',
              time_last_update_utc: 't',
              conversion_rates: { USD: 1, EUR: 0.9, JPY: 150, GBP: 0.8 },
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          base: 'USD',
          time_last_update_utc: 't',
          rates: { EUR: 0.9, JPY: 150 },
        }),
    ),
    '/exchangerate/v1/convert': rows(
      (b) => [
        {
          origin: 'https://v6.exchangerate-api.com',
          method: 'GET',
          path: `/v6/${key('EXCHANGERATE_API_KEY')}/pair/${String(b.from)}/${String(b.to)}/${String(b.amount)}`,
          reply: [
            200,
            {
              result: 'success',
              base_code: 'USD',
              target_code: 'EUR',
              conversion_rate: 0.9,
              conversion_result: 90,
              time_last_update_utc: 't',
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          from: 'USD',
          to: 'EUR',
          rate: 0.9,
          amount: 100,
          result: 90,
          time_last_update_utc: 't',
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
