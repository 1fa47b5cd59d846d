/**
 * The Gemini family: `POST /models/<model>:generateContent` and `:embedContent` with
 * `x-goog-api-key`. The model comes from the catalog mapping (`params.model`).
 *
 * @module
 */
import { failed } from './http.js'
import type { Family, Operation, OperationContext, UpstreamFailed } from './upstream.js'

const modelPattern = /^[a-z0-9][a-z0-9.-]{0,99}$/

function post(ctx: OperationContext, method: string, body: unknown): Request | UpstreamFailed {
  const model = ctx.params.model ?? ''
  if (!modelPattern.test(model)) return failed('gemini model parameter is not a model name')
  return new Request(`${ctx.baseUrl}/models/${model}:${method}`, {
    method: 'POST',
    headers: {
      'x-goog-api-key': ctx.apiKey,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify(body),
  })
}

/** `:generateContent` with the CONTENTS body. */
export const generateContent: Operation = {
  request: (body, ctx) => post(ctx, 'generateContent', { contents: body.contents }),
}

/** `:embedContent` with the EMBED-CONTENT body (and the model name the API asks for). */
export const embedContent: Operation = {
  request: (body, ctx) =>
    post(ctx, 'embedContent', { model: `models/${ctx.params.model}`, content: body.content }),
}

/** The Gemini family module. */
export const gemini: Family = {
  id: 'gemini',
  timeoutMs: 120_000,
  operations: { generateContent, embedContent },
}
