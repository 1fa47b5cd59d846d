/**
 * JSON families for text: DeepL (`DeepL-Auth-Key`), Google Translate (`key` in the query), Cohere
 * v2 (bearer), Exa and Serper (`x-api-key`), and Jina Reader (`GET r.jina.ai/<url>`, bearer).
 *
 * @module
 */
import { failed } from './http.js'
import { defined, postJsonWith } from './kit.js'
import type { Family, OperationContext } from './upstream.js'

const list = (value: unknown) => (Array.isArray(value) ? value : [value])

/** The DeepL family: `POST /translate` with `text` always an array. */
export const deepl: Family = {
  id: 'deepl',
  timeoutMs: 30_000,
  operations: {
    translate: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          '/translate',
          defined({
            text: list(b.text),
            target_lang: b.target_lang,
            source_lang: b.source_lang,
            formality: b.formality,
            context: b.context,
          }),
          { authorization: `DeepL-Auth-Key ${ctx.apiKey}` },
        ),
    },
  },
}

const keyQuery = (ctx: OperationContext) => `?key=${encodeURIComponent(ctx.apiKey)}`

/** The Google Translate (v2) family: JSON POSTs with `key` in the query. */
export const googleTranslate: Family = {
  id: 'google-translate',
  timeoutMs: 20_000,
  operations: {
    translate: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          keyQuery(ctx),
          defined({ q: b.q, target: b.target, source: b.source, format: b.format ?? 'text' }),
          {},
        ),
    },
    detect: { request: (b, ctx) => postJsonWith(ctx, `/detect${keyQuery(ctx)}`, { q: b.q }, {}) },
  },
}

const bearer = (ctx: OperationContext) => ({ authorization: `Bearer ${ctx.apiKey}` })

/** The Cohere v2 family: chat, embed (float embeddings), rerank. */
export const cohere: Family = {
  id: 'cohere',
  timeoutMs: 60_000,
  operations: {
    chat: { request: (b, ctx) => postJsonWith(ctx, '/chat', { ...b, stream: false }, bearer(ctx)) },
    embed: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          '/embed',
          {
            model: b.model,
            texts: b.texts,
            input_type: b.input_type ?? 'search_document',
            embedding_types: ['float'],
          },
          bearer(ctx),
        ),
    },
    rerank: { request: (b, ctx) => postJsonWith(ctx, '/rerank', b, bearer(ctx)) },
  },
}

/** The Exa family: search and contents (text on by default). */
export const exa: Family = {
  id: 'exa',
  timeoutMs: 30_000,
  operations: {
    search: {
      request: (b, ctx) => postJsonWith(ctx, '/search', b, { 'x-api-key': ctx.apiKey }),
    },
    contents: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          '/contents',
          { urls: b.urls, text: b.text ?? true },
          { 'x-api-key': ctx.apiKey },
        ),
    },
  },
}

/** The Serper family: Google web and image search. */
export const serper: Family = {
  id: 'serper',
  timeoutMs: 15_000,
  operations: {
    search: { request: (b, ctx) => postJsonWith(ctx, '/search', b, { 'x-api-key': ctx.apiKey }) },
    images: { request: (b, ctx) => postJsonWith(ctx, '/images', b, { 'x-api-key': ctx.apiKey }) },
  },
}

/** The Jina Reader family: `GET <base>/<url>` answered as JSON (title, url, content). */
export const jina: Family = {
  id: 'jina',
  timeoutMs: 60_000,
  operations: {
    read: {
      request(b, ctx) {
        const url = String(b.url)
        if (!/^https?:\/\//i.test(url)) return failed('url is not http(s)')
        return new Request(`${ctx.baseUrl}/${url}`, {
          method: 'GET',
          headers: { ...bearer(ctx), accept: 'application/json', 'x-return-format': 'markdown' },
        })
      },
    },
  },
}
