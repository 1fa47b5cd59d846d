/**
 * The private inference API in the gateway's OpenAPI document: `POST /v1/chat/completions` (bearer
 * key), `GET /v1/models` (public) and the paid credit top-ups `POST /v1/credit/<usdc>` (with
 * `x-payment-info`, like every priced operation).
 *
 * @module
 */

import { formatAmount, parseAmount } from 'tollgate'
import { z } from 'zod'
import { operationIdOf } from '../catalog/catalog.js'
import type { PaymentInfo } from '../discovery/openapi.js'
import { chatRequestSchema } from './request.js'

/** The body of a credit top-up: the key's public id. */
export const topUpBodySchema = z.object({
  key_id: z.string().regex(/^key_[0-9a-f]{16}$/, 'must be a key id (key_…)'),
})

/** The path of the top-up of `amount` USDC (`"5"` → `/v1/credit/5`). */
export function topUpPath(amount: string): string {
  return `/v1/credit/${amount}`
}

/** What the inference paths need to state their payment terms. */
export type InferenceOpenApiOptions = {
  /** Top-up amounts (USDC decimals). */
  topUps: readonly string[]
  network: string
  asset: string
  payTo: string
}

const error = (description: string) => ({
  description,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            properties: {
              message: { type: 'string' },
              type: { type: 'string' },
              code: { type: 'string' },
              param: { type: ['string', 'null'] },
            },
          },
        },
      },
    },
  },
})

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<
    string,
    unknown
  >
  return rest
}

/** The OpenAPI path items and the security scheme of the inference API. */
export function inferenceOpenApi(options: InferenceOpenApiOptions): {
  paths: Record<string, Record<string, Record<string, unknown>>>
  securitySchemes: Record<string, Record<string, unknown>>
} {
  const paths: Record<string, Record<string, Record<string, unknown>>> = {
    '/v1/chat/completions': {
      post: {
        operationId: operationIdOf('/v1/chat/completions'),
        summary: 'Chat completion with an API key (private inference), buffered or streamed',
        tags: ['ai'],
        security: [{ apiKey: [] }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: jsonSchema(chatRequestSchema),
              example: { model: 'llama-3.3-70b', messages: [{ role: 'user', content: 'Hello' }] },
            },
          },
        },
        responses: {
          '200': {
            description:
              'A chat.completion, or with stream true chat.completion.chunk events ending [DONE]',
            content: {
              'application/json': { schema: { type: 'object' } },
              'text/event-stream': { schema: { type: 'string' } },
            },
          },
          '400': error('Invalid request, or over the model’s context window'),
          '401': error('Missing or invalid API key'),
          '402': error('Insufficient credit'),
          '404': error('Unknown model'),
          '429': error('Rate limit exceeded (Retry-After)'),
          '502': error('The model’s upstream failed (credit restored)'),
        },
      },
    },
    '/v1/models': {
      get: {
        operationId: operationIdOf('/v1/models'),
        summary: 'The models, with pricing, context window and privacy tier (public)',
        tags: ['ai'],
        responses: {
          '200': {
            description: 'OK',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
        },
      },
    },
  }
  for (const amount of options.topUps) {
    const units = parseAmount(amount)
    const path = topUpPath(amount)
    const paymentInfo: PaymentInfo = {
      pricingMode: 'fixed',
      price: formatAmount(units),
      protocols: ['mpp', 'x402'],
      x402: {
        scheme: 'exact',
        network: options.network,
        asset: options.asset,
        payTo: options.payTo,
      },
    }
    paths[path] = {
      post: {
        operationId: operationIdOf(path),
        summary: `Add ${formatAmount(units)} USDC of credit to an API key (anyone may pay)`,
        tags: ['ai'],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: jsonSchema(topUpBodySchema),
              example: { key_id: 'key_0123456789abcdef' },
            },
          },
        },
        responses: {
          '200': {
            description: 'OK',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          '402': { description: 'Payment Required' },
        },
        'x-payment-info': paymentInfo,
      },
    }
  }
  return {
    paths,
    securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'API key (tg_…)' } },
  }
}
