/**
 * The OpenAPI paths of the marketplace's signed routes (`/v1/agent/…`), merged into the gateway's
 * document when they are served.
 *
 * @module
 */

const address = { type: 'string', pattern: '^0x[0-9a-fA-F]{1,64}$' }
const listingId = { type: 'string', pattern: '^lst_[0-9a-f]{24}$' }
const tags = {
  type: 'array',
  maxItems: 16,
  items: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 32 },
}
const serviceBody = {
  oneOf: [
    {
      type: 'object',
      required: ['op', 'listingId'],
      additionalProperties: false,
      properties: {
        op: { const: 'update' },
        listingId,
        name: { type: 'string', minLength: 1, maxLength: 120 },
        description: { type: 'string', maxLength: 2000 },
        tags,
      },
    },
    {
      type: 'object',
      required: ['op', 'listingId'],
      additionalProperties: false,
      properties: { op: { const: 'delist' }, listingId },
    },
  ],
}
const submitBody = {
  type: 'object',
  required: ['url', 'name'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', format: 'uri', maxLength: 2048 },
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], default: 'POST' },
    probeBody: {
      type: 'string',
      maxLength: 8192,
      default: '{}',
      description: 'JSON text the probes send',
    },
    name: { type: 'string', minLength: 1, maxLength: 120 },
    description: { type: 'string', maxLength: 2000 },
    tags,
    inputSchema: {
      type: 'object',
      description: 'JSON Schema of the request body (at most 16 KiB), shown by /discovery',
    },
  },
}
const reviewBody = {
  type: 'object',
  required: ['seller', 'purchase', 'rating', 'text'],
  additionalProperties: false,
  properties: {
    seller: address,
    purchase: {
      type: 'string',
      pattern: '^[1-9A-HJ-NP-Za-km-z]{32,64}$',
      description: 'the payment digest',
    },
    rating: { type: 'integer', minimum: 1, maximum: 5 },
    text: { type: 'string', maxLength: 2000 },
  },
}
const json = (description: string) => ({
  description,
  content: { 'application/json': { schema: { type: 'object' } } },
})
const body = (schema: object) => ({
  required: true,
  content: { 'application/json': { schema } },
})

const page = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  {
    name: 'offset',
    in: 'query',
    schema: { type: 'integer', minimum: 0, maximum: 100000, default: 0 },
  },
]
const discoveryFilters = [
  { name: 'type', in: 'query', schema: { type: 'string', maxLength: 32 }, description: 'http' },
  { name: 'payTo', in: 'query', schema: address },
  { name: 'scheme', in: 'query', schema: { type: 'string', maxLength: 32 }, description: 'exact' },
  { name: 'network', in: 'query', schema: { type: 'string', maxLength: 64 } },
  ...page,
]

/** The paths of the marketplace routes under `/v1/agent`, `/v1/services` and `/discovery`. */
export function marketplacePaths(): Record<string, Record<string, unknown>> {
  return {
    '/v1/agent/endpoint/prepare': {
      post: {
        operationId: 'v1-agent-endpoint-prepare',
        tags: ['marketplace'],
        summary: 'A single-use nonce and the exact message to sign for a catalog mutation',
        requestBody: body({
          type: 'object',
          oneOf: [
            {
              type: 'object',
              required: ['address', 'action', 'body'],
              additionalProperties: false,
              properties: { address, action: { const: 'submit' }, body: submitBody },
            },
            {
              type: 'object',
              required: ['address', 'action', 'body'],
              additionalProperties: false,
              properties: { address, action: { const: 'service' }, body: serviceBody },
            },
            {
              type: 'object',
              required: ['address', 'action', 'body'],
              additionalProperties: false,
              properties: { address, action: { const: 'review' }, body: reviewBody },
            },
          ],
        }),
        responses: {
          '201': {
            description: 'The nonce, the message to sign and when the nonce expires',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['nonce', 'message', 'sha256', 'expiresAt'],
                  properties: {
                    nonce: { type: 'string' },
                    message: { type: 'string' },
                    sha256: { type: 'string' },
                    expiresAt: { type: 'string', format: 'date-time' },
                  },
                },
              },
            },
          },
          '400': json('Malformed body (code invalid_request_body)'),
        },
      },
    },
    '/v1/agent/endpoint/submit': {
      post: {
        operationId: 'v1-agent-endpoint-submit',
        tags: ['marketplace'],
        summary: 'Signed submission: run the four listing gates and list the endpoint',
        requestBody: body({
          type: 'object',
          required: ['address', 'nonce', 'signature', 'body'],
          additionalProperties: false,
          properties: {
            address,
            nonce: { type: 'string', pattern: '^[0-9a-f]{32}$' },
            signature: { type: 'string', description: 'Sui personal-message signature' },
            body: submitBody,
          },
        }),
        responses: {
          '201': json('Listed: the listing with the terms of its challenge'),
          '400': json('Malformed body or unusable URL (code invalid_request_body)'),
          '401': json('Refused (code mutation_refused, with a reason); nothing changed'),
          '422': json(
            'Not listed (code listing_refused): failedGates, failures with evidence, notJudged',
          ),
        },
      },
    },
    '/v1/services': {
      get: {
        operationId: 'v1-services',
        tags: ['marketplace'],
        summary:
          "The gateway's paid endpoints, then the listed seller endpoints (suspended ones hidden)",
        parameters: [
          { name: 'tag', in: 'query', schema: { type: 'string', maxLength: 32 } },
          { name: 'network', in: 'query', schema: { type: 'string', maxLength: 64 } },
          {
            name: 'maxPrice',
            in: 'query',
            schema: { type: 'string', pattern: '^[0-9]{1,18}$' },
            description: 'base units',
          },
          { name: 'seller', in: 'query', schema: address },
          {
            name: 'limit',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
          },
          {
            name: 'offset',
            in: 'query',
            schema: { type: 'integer', minimum: 0, maximum: 100000, default: 0 },
          },
          {
            name: 'cursor',
            in: 'query',
            schema: { type: 'string', maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' },
            description:
              'Where the page starts: the nextCursor of the previous page, with the same filters (instead of offset; not both). A cursor page costs the same at any depth and does not skip or repeat listings added meanwhile.',
          },
        ],
        responses: {
          '200': json(
            "{ items, total, totalCapped?, limit, offset, nextCursor? }: total counts up to 1000 listings past the gateway's own items (totalCapped: true when more match); nextCursor is absent on the last page",
          ),
          '400': json('Bad query (code invalid_request_body)'),
        },
      },
    },
    '/discovery/resources': {
      get: {
        operationId: 'discovery-resources',
        tags: ['marketplace'],
        summary:
          "x402 Bazaar discovery: the gateway's paid endpoints, then the listed seller endpoints, each with its request body's JSON Schema",
        parameters: discoveryFilters,
        responses: {
          '200': json(
            '{ x402Version: 1, items: [{ resource, type, x402Version, accepts, lastUpdated, metadata }], pagination: { limit, offset, total } }',
          ),
          '400': json('Bad query (code invalid_request_body)'),
        },
      },
    },
    '/discovery/search': {
      get: {
        operationId: 'discovery-search',
        tags: ['marketplace'],
        summary:
          'Search the resources of /discovery/resources: every word must appear in the name, description, tags or URL',
        parameters: [
          {
            name: 'query',
            in: 'query',
            required: true,
            schema: { type: 'string', minLength: 1, maxLength: 200 },
          },
          ...discoveryFilters,
        ],
        responses: {
          '200': json('{ x402Version: 1, query, items, pagination }'),
          '400': json('Bad query (code invalid_request_body)'),
        },
      },
    },
    '/v1/reviews': {
      get: {
        operationId: 'v1-reviews',
        tags: ['marketplace'],
        summary: "A seller's reviews, newest first, and its average rating",
        parameters: [{ name: 'seller', in: 'query', required: true, schema: address }, ...page],
        responses: {
          '200': json('{ seller, rating: { average, count }, reviews, total, limit, offset }'),
          '400': json('Bad query (code invalid_request_body)'),
        },
      },
      post: {
        operationId: 'v1-reviews-post',
        tags: ['marketplace'],
        summary:
          'Signed review of a paid call by its buyer: 1–5 stars and text, one per purchase, never by the seller, never of a refunded or unserved call',
        requestBody: body({
          type: 'object',
          required: ['address', 'nonce', 'signature', 'body'],
          additionalProperties: false,
          properties: {
            address,
            nonce: { type: 'string', pattern: '^[0-9a-f]{32}$' },
            signature: { type: 'string', description: 'Sui personal-message signature' },
            body: reviewBody,
          },
        }),
        responses: {
          '201': json('The review'),
          '400': json('Malformed body (code invalid_request_body)'),
          '401': json('Refused signature or nonce (code mutation_refused, with a reason)'),
          '403': json(
            'Refused by a review rule (code review_refused; reason no_purchase, not_buyer, self_purchase, refunded, not_completed, invalid_rating or already_reviewed)',
          ),
        },
      },
    },
    '/v1/activity': {
      get: {
        operationId: 'v1-activity',
        tags: ['marketplace'],
        summary:
          'The activity feed: payments settled through the gateway and verified reports, newest first',
        parameters: page,
        responses: {
          '200': json(
            '{ items: [{ id, source, digest, seller, buyer, amount, asset, resource, at }], total, limit, offset }',
          ),
          '400': json('Bad query (code invalid_request_body)'),
        },
      },
    },
    '/v1/activity/stream': {
      get: {
        operationId: 'v1-activity-stream',
        tags: ['marketplace'],
        summary: 'The activity feed live: one server-sent event `activity` per new item',
        responses: {
          '200': {
            description: 'text/event-stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
        },
      },
    },
    '/api/mpp/report': {
      post: {
        operationId: 'api-mpp-report',
        tags: ['marketplace'],
        summary:
          'Report a payment made directly to a listed seller: it enters the feed once its transaction is found on the ledger paying that seller, once per digest',
        requestBody: body({
          type: 'object',
          required: ['digest', 'seller'],
          additionalProperties: false,
          properties: {
            digest: { type: 'string', pattern: '^[1-9A-HJ-NP-Za-km-z]{32,64}$' },
            seller: address,
          },
        }),
        responses: {
          '201': json('The feed item'),
          '400': json('Malformed body (code invalid_request_body)'),
          '422': json(
            'Not in the feed (code report_refused; reason not_a_seller, not_found, not_paying_seller or already_reported)',
          ),
          '503': json('The ledger did not answer (code ledger_unavailable)'),
        },
      },
    },
    '/v1/agent/{address}': {
      get: {
        operationId: 'v1-agent-address',
        tags: ['marketplace'],
        summary: 'Public profile: identity record, endpoints with their states and probe history',
        parameters: [{ name: 'address', in: 'path', required: true, schema: address }],
        responses: {
          '200': json('{ address, identity, endpoints: [listing + probes (newest 20)] }'),
          '400': json('Not a Sui address (code invalid_request_body)'),
        },
      },
    },
    '/v1/agent/service': {
      post: {
        operationId: 'v1-agent-service',
        tags: ['marketplace'],
        summary: 'Signed catalog mutation: update or delist a listing',
        requestBody: body({
          type: 'object',
          required: ['address', 'nonce', 'signature', 'body'],
          additionalProperties: false,
          properties: {
            address,
            nonce: { type: 'string', pattern: '^[0-9a-f]{32}$' },
            signature: { type: 'string', description: 'Sui personal-message signature' },
            body: serviceBody,
          },
        }),
        responses: {
          '200': json('The listing after the change'),
          '400': json('Malformed body (code invalid_request_body)'),
          '401': json('Refused (code mutation_refused, with a reason); nothing changed'),
          '404': json('No such listing (code listing_not_found)'),
        },
      },
    },
  }
}
