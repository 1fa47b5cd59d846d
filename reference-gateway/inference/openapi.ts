/**
 * The private inference API in the gateway's OpenAPI document: `POST /v1/chat/completions` (bearer
 * key), `GET /v1/models` (public), the public verification routes of confidential models
 * (`GET /v1/aci/attestation`, `/v1/aci/receipts/{id}`, `/v1/aci/sessions/{id}`, `GET|POST
 * /v1/aci/anchor/{id}`) and the paid credit
 * top-ups `POST /v1/credit/<usdc>` (with `x-payment-info`, like every priced operation).
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

const okJson = (description: string) => ({
  description,
  content: { 'application/json': { schema: { type: 'object' } } },
})
const idParameter = (description: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,140}$' },
})

/** The public verification routes of confidential models. */
function aciPaths(): Record<string, Record<string, Record<string, unknown>>> {
  return {
    '/v1/aci/attestation': {
      get: {
        operationId: operationIdOf('/v1/aci/attestation'),
        summary:
          'Attestation status of a confidential model (public); with nonce, a fresh report bound to it',
        tags: ['ai'],
        parameters: [
          {
            name: 'model',
            in: 'query',
            required: false,
            description: 'A confidential model id (optional when there is one)',
            schema: { type: 'string' },
          },
          {
            name: 'nonce',
            in: 'query',
            required: false,
            description: '16 to 64 bytes of lowercase hex: adds the enclave’s report bound to it',
            schema: { type: 'string', pattern: '^(?:[0-9a-f]{2}){16,64}$' },
          },
        ],
        responses: {
          '200': okJson('verified, enforced, tee_type, workload_id, signing keys, tcb_status'),
          '400': error('Bad model or nonce'),
          '404': error('No such confidential model'),
          '429': error(
            'Too many fresh-nonce attestations from this address (rate_limit_exceeded, Retry-After)',
          ),
        },
      },
    },
    '/v1/aci/receipts/{id}': {
      get: {
        operationId: operationIdOf('/v1/aci/receipts/{id}'),
        summary: 'The signed receipt of a confidential answer (public, stored durably)',
        tags: ['ai'],
        parameters: [idParameter('The x-receipt-id of the answer')],
        responses: {
          '200': okJson('The enclave’s receipt, the relayed hashes and the session id'),
          '404': error('No such receipt'),
        },
      },
    },
    '/v1/aci/sessions/{id}': {
      get: {
        operationId: operationIdOf('/v1/aci/sessions/{id}'),
        summary: 'The attested session a receipt references (public)',
        tags: ['ai'],
        parameters: [idParameter('The session_id of a receipt')],
        responses: {
          '200': okJson('The report, its nonce and the policy it was verified against'),
          '404': error('No such session'),
        },
      },
    },
    '/v1/aci/anchor/{id}': {
      get: {
        operationId: `get-${operationIdOf('/v1/aci/anchor/{id}')}`,
        summary: 'The ledger anchor of a receipt: its state and transaction digest (public)',
        tags: ['ai'],
        parameters: [idParameter('The x-receipt-id of the answer')],
        responses: {
          '200': okJson('state (pending, signed, anchored), digest, the fields committed'),
          '404': error('No such receipt'),
        },
      },
      post: {
        operationId: `post-${operationIdOf('/v1/aci/anchor/{id}')}`,
        summary: 'Idempotent backfill: queue the anchor if missing and anchor what is due (public)',
        tags: ['ai'],
        parameters: [idParameter('The x-receipt-id of the answer')],
        responses: {
          '200': okJson('Anchored'),
          '202': okJson('Queued, not anchored yet'),
          '404': error('No such receipt'),
        },
      },
    },
  }
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
          '502': error(
            'The model’s upstream failed, or a confidential model’s enclave did not prove itself ' +
              '(attestation_failed); credit restored',
          ),
        },
      },
    },
    ...aciPaths(),
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
