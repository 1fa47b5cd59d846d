/**
 * The Anthropic family: `POST /messages` with `x-api-key` and `anthropic-version: 2023-06-01`.
 *
 * @module
 */
import type { Family, Operation } from './upstream.js'

/** The Anthropic API version header value. */
export const anthropicVersion = '2023-06-01'

/** `POST /messages`: the validated MESSAGES body as is. */
export const messages: Operation = {
  request: (body, ctx) =>
    new Request(`${ctx.baseUrl}/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': ctx.apiKey,
        'anthropic-version': anthropicVersion,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify(body),
    }),
}

/** The Anthropic family module. */
export const anthropic: Family = {
  id: 'anthropic',
  timeoutMs: 120_000,
  operations: { messages },
}
