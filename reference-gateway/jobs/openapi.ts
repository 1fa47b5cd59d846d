/**
 * The OpenAPI paths of the escrowed-job routes (`/v1/jobs`), merged into the gateway's document
 * when the routes are served.
 *
 * @module
 */

const signed = {
  required: true,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['transaction', 'signature'],
        additionalProperties: false,
        properties: {
          transaction: { type: 'string', description: 'base64 BCS TransactionData of the move' },
          signature: { type: 'string', description: 'the signer’s Sui signature of it' },
        },
      },
    },
  },
}
const jobId = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{1,64}$' },
}
const json = (description: string) => ({
  description,
  content: { 'application/json': { schema: { type: 'object' } } },
})
const refused = json('The ledger refused or aborted the move (code job_move_failed)')
const bad = json('Malformed body, or a transaction that is not this move on this job')

function move(name: string, who: string) {
  return {
    post: {
      operationId: `v1-jobs-id-${name}`,
      summary: `${name[0]?.toUpperCase()}${name.slice(1)} a job (signed by ${who})`,
      tags: ['jobs'],
      parameters: [jobId],
      requestBody: signed,
      responses: { '200': json('Executed; the job after the move'), '400': bad, '409': refused },
    },
  }
}

/** The `/v1/jobs…` path items. */
export function jobPaths(): Record<string, Record<string, Record<string, unknown>>> {
  return {
    '/v1/jobs': {
      post: {
        operationId: 'v1-jobs',
        summary: 'Create a job offer: answers 402 with the escrow terms (extra.escrow)',
        tags: ['jobs'],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['seller', 'amount', 'description'],
                additionalProperties: false,
                properties: {
                  seller: { type: 'string' },
                  amount: { type: 'string', description: 'USDC decimal, e.g. "2.5"' },
                  description: { type: 'string', maxLength: 2000 },
                  deliverWithinSeconds: { type: 'integer', minimum: 60, default: 3600 },
                  reviewSeconds: { type: 'integer', minimum: 60, default: 3600 },
                },
              },
            },
          },
        },
        responses: { '400': bad, '402': { description: 'Payment Required (escrow)' } },
      },
    },
    '/v1/jobs/fund': {
      post: {
        operationId: 'v1-jobs-fund',
        summary: 'Fund a job (escrow::fund signed by the buyer)',
        tags: ['jobs'],
        requestBody: signed,
        responses: { '201': json('Funded: jobId, digest, job'), '400': bad, '409': refused },
      },
    },
    '/v1/jobs/{id}': {
      get: {
        operationId: 'v1-jobs-id',
        summary: 'A job’s state, read from the ledger',
        tags: ['jobs'],
        parameters: [jobId],
        responses: { '200': json('The job'), '404': json('No such job') },
      },
    },
    '/v1/jobs/{id}/deliver': move('deliver', 'the seller'),
    '/v1/jobs/{id}/release': move('release', 'the buyer'),
    '/v1/jobs/{id}/reject': move('reject', 'the buyer'),
    '/v1/jobs/{id}/refund': move('refund', 'the buyer or the seller'),
    '/v1/jobs/{id}/review': {
      post: {
        operationId: 'v1-jobs-id-review',
        summary: 'Review a released job, 1 to 5 stars (signed by the buyer)',
        tags: ['jobs'],
        parameters: [jobId],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['rating', 'reviewer', 'signature'],
                additionalProperties: false,
                properties: {
                  rating: { type: 'integer', minimum: 1, maximum: 5 },
                  comment: { type: 'string', maxLength: 2000 },
                  reviewer: { type: 'string' },
                  signature: {
                    type: 'string',
                    description: 'Sui personal-message signature of the review message',
                  },
                },
              },
            },
          },
        },
        responses: {
          '201': json('Stored'),
          '401': json('Bad signature'),
          '403': json('Refused: reason not_buyer, self_purchase, refunded, not_completed, …'),
          '404': json('No such job'),
        },
      },
      get: {
        operationId: 'v1-jobs-id-review-get',
        summary: 'The review of a job',
        tags: ['jobs'],
        parameters: [jobId],
        responses: { '200': json('The review'), '404': json('No review') },
      },
    },
  }
}
