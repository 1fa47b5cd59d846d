/**
 * The gateway's inference API as MCP tools: one chat tool per model. A model offered keyless
 * (`GET /open/v1/models`) is called on the paid keyless route (`POST /open/v1/chat/completions`),
 * paid per call from the wallet at that route's price. A model that needs an API key (in
 * `GET /v1/models` but not keyless) is offered only when the server was given a key, and is called
 * on `POST /v1/chat/completions` with it: the key's credit pays by the token, and the per-call
 * maximum and the budgets count the most a call can cost (the whole context window at the higher of
 * the model's two token prices). The input schema is the route's request schema from the
 * gateway's OpenAPI document, without `model` (the tool's) and `stream` (answers are whole).
 *
 * @module
 */
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { formatAmount, parseAmount } from '../money.js'
import type { SessionBudget } from './budget.js'
import { type CatalogTool, readDocument, toolName } from './catalogTools.js'
import type { Fetcher } from './sellerTools.js'

/** The gateway's keyless (paid per call) chat route and its model list. */
const keylessChatPath = '/open/v1/chat/completions'
const keylessModelsPath = '/open/v1/models'
/** The gateway's keyed (API key credit) chat route and its model list. */
const keyedChatPath = '/v1/chat/completions'
const modelsPath = '/v1/models'

const text = (max: number) => z.string().max(max)

const modelListSchema = z.looseObject({
  data: z
    .array(
      z.looseObject({
        id: text(128),
        pricing: z
          .looseObject({
            /** A flat price of one call (older gateways). */
            per_call: text(32).optional(),
            /** USDC per input token and per output token. */
            prompt: text(32).optional(),
            completion: text(32).optional(),
          })
          .optional(),
        context_window: z.int().min(0).optional(),
        privacy: text(32).optional(),
      }),
    )
    .max(256),
})

const operationSchema = z.looseObject({
  requestBody: z
    .looseObject({
      content: z.record(
        z.string(),
        z.looseObject({ schema: z.record(z.string(), z.unknown()).optional() }),
      ),
    })
    .optional(),
  'x-payment-info': z.looseObject({ price: text(64) }).optional(),
})

const openApiSchema = z.looseObject({
  paths: z.record(text(512), z.looseObject({ post: operationSchema.optional() })),
})

type Model = z.infer<typeof modelListSchema>['data'][number]

const perTokenPattern = /^(0|[1-9][0-9]{0,6})(?:\.([0-9]{1,12}))?$/

/** A USDC price per token (up to 12 decimals) in base units per million tokens. */
function perMillion(text: string): bigint | undefined {
  const match = perTokenPattern.exec(text)
  if (match === null) return undefined
  return BigInt(match[1] ?? '0') * 10n ** 12n + BigInt((match[2] ?? '').padEnd(12, '0'))
}

/**
 * What a keyed call of `model` may cost at most, and how it is priced: its flat price, or, priced
 * by the token, the whole context window at the higher token price. Undefined when not priced.
 */
function keyedPrice(model: Model): { max: bigint; about: string } | undefined {
  const pricing = model.pricing
  if (pricing?.per_call !== undefined) {
    const price = parseAmount(pricing.per_call)
    return { max: price, about: `${formatAmount(price)} USDC per call` }
  }
  const prompt = pricing?.prompt === undefined ? undefined : perMillion(pricing.prompt)
  const completion = pricing?.completion === undefined ? undefined : perMillion(pricing.completion)
  if (prompt === undefined || completion === undefined || model.context_window === undefined) {
    return undefined
  }
  // Every token of the window at the higher price.
  let highest = prompt
  if (completion > highest) highest = completion
  const max = (BigInt(model.context_window) * highest + 999_999n) / 1_000_000n
  return {
    max,
    about:
      `${pricing?.prompt} USDC per prompt token and ${pricing?.completion} per output token, ` +
      `up to ${formatAmount(max)} USDC per call`,
  }
}

/** The chat fallback schema, when the OpenAPI document has none. */
const fallbackSchema = {
  type: 'object',
  properties: {
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: { role: { type: 'string' }, content: { type: 'string' } },
        required: ['role', 'content'],
      },
    },
    max_tokens: { type: 'integer', minimum: 1 },
    temperature: { type: 'number', minimum: 0, maximum: 2 },
  },
  required: ['messages'],
}

/** A chat route's request schema without `model` and `stream`. */
function chatSchema(
  operation: z.infer<typeof operationSchema> | undefined,
): Record<string, unknown> {
  const schema = operation?.requestBody?.content['application/json']?.schema
  const properties = schema?.properties
  if (schema === undefined || typeof properties !== 'object' || properties === null) {
    return fallbackSchema
  }
  const { model: _model, stream: _stream, ...rest } = properties as Record<string, unknown>
  const required = Array.isArray(schema.required)
    ? schema.required.filter((name) => name !== 'model' && name !== 'stream')
    : []
  return { ...schema, type: 'object', properties: rest, required }
}

function about(model: Model): string {
  const facts = [
    model.privacy,
    model.context_window === undefined ? undefined : `${model.context_window} tokens of context`,
  ].filter((fact) => fact !== undefined)
  return facts.length === 0 ? '' : ` (${facts.join(', ')})`
}

/** What {@link toolsFromInference} reads. */
export type InferenceDocuments = {
  /** The gateway's `/openapi.json`. */
  openapi: unknown
  /** `GET /open/v1/models`: the models offered keyless. */
  keyless: unknown
  /** `GET /v1/models`: every model (read only when a key was given). */
  all?: unknown
}

/**
 * The chat tools of the inference API: one per keyless model, paid per call at the keyless route's
 * price; with `withKey`, one per model that needs a key, at its own prices from the key's credit.
 *
 * @throws {ZodError} when the OpenAPI document or a model list is not in the gateway's shape.
 * @example
 * ```ts
 * toolsFromInference({ openapi, keyless }, 'http://127.0.0.1:4020', false) // [{ name: 'chat-llama-3_3-70b', … }]
 * ```
 */
export function toolsFromInference(
  documents: InferenceDocuments,
  gateway: string,
  withKey: boolean,
): CatalogTool[] {
  const base = gateway.replace(/\/+$/, '')
  const paths = openApiSchema.parse(documents.openapi).paths
  const keylessRoute = paths[keylessChatPath]?.post
  const routePrice = keylessRoute?.['x-payment-info']?.price
  const keyless = routePrice === undefined ? [] : modelListSchema.parse(documents.keyless).data
  const tools: CatalogTool[] = []
  if (routePrice !== undefined) {
    const price = parseAmount(routePrice)
    const inputSchema = chatSchema(keylessRoute)
    for (const model of keyless) {
      tools.push({
        name: toolName(`chat-${model.id}`),
        description:
          `Chat with the model ${model.id}${about(model)} on the gateway's inference API. ` +
          `Price: ${formatAmount(price)} USDC per call, paid from your wallet.`,
        inputSchema,
        method: 'POST',
        url: `${base}${keylessChatPath}`,
        price,
        fixed: { model: model.id, stream: false },
      })
    }
  }
  if (withKey && documents.all !== undefined) {
    const offered = new Set(keyless.map((model) => model.id))
    const inputSchema = chatSchema(paths[keyedChatPath]?.post)
    for (const model of modelListSchema.parse(documents.all).data) {
      const price = offered.has(model.id) ? undefined : keyedPrice(model)
      if (price === undefined) continue
      tools.push({
        name: toolName(`chat-${model.id}`),
        description:
          `Chat with the model ${model.id}${about(model)} on the gateway's inference API. ` +
          `Price: ${price.about}, debited from your API key's credit.`,
        inputSchema,
        method: 'POST',
        url: `${base}${keyedChatPath}`,
        price: price.max,
        source: 'keyed',
        fixed: { model: model.id, stream: false },
      })
    }
  }
  return tools
}

/** The result of {@link loadInferenceTools}. */
export type InferenceTools = { tools: CatalogTool[]; warnings: string[] }

/**
 * Reads the inference API's models as tools. Never throws: a gateway without an inference API has
 * no chat tools (and a warning says why).
 *
 * @param apiKey - the buyer's API key, if any: only to list (and later call) the models that need
 *   one. Security: sent only to the gateway, never logged or put in a message.
 * @example
 * ```ts
 * const { tools, warnings } = await loadInferenceTools(gateway, fetch, process.env.TOLLGATE_API_KEY)
 * ```
 */
export async function loadInferenceTools(
  gateway: string,
  fetcher: Fetcher,
  apiKey: string | undefined,
): Promise<InferenceTools> {
  const base = gateway.replace(/\/+$/, '')
  const key = apiKey === '' ? undefined : apiKey
  try {
    const [openapi, keyless, all] = await Promise.all([
      readDocument(base, '/openapi.json', fetcher),
      readDocument(base, keylessModelsPath, fetcher).catch(() => ({ data: [] })),
      key === undefined
        ? undefined
        : readDocument(base, modelsPath, fetcher).catch(() => undefined),
    ])
    return {
      tools: toolsFromInference({ openapi, keyless, all }, base, key !== undefined),
      warnings: [],
    }
  } catch (error) {
    const reason = error instanceof Error ? error.message.slice(0, 200) : 'unreadable'
    return { tools: [], warnings: [`No inference models read from ${base} (${reason}).`] }
  }
}

/** What {@link sendKeyed} needs. */
export type KeyedCallOptions = {
  /** The API key. Security: sent as the bearer credential to the gateway only. */
  apiKey: string
  /** Most one call may cost, base units. */
  maxPrice: bigint | undefined
  fetch: Fetcher
}

/**
 * Calls a keyed chat tool: the per-call maximum and the budgets are checked on the model's price
 * first (the same codes as a paid call), the spend counted, then released when the gateway did
 * not debit the credit (any answer but a 2xx: it refuses before debiting, and restores the debit
 * of a failed upstream).
 *
 * @throws {PaymentError} `PRICE_ABOVE_MAX`, `LIMIT_PER_SESSION`, `LIMIT_PER_DAY`.
 * @example
 * ```ts
 * const response = await sendKeyed(tool, { messages }, session, { apiKey, maxPrice: 100_000n, fetch })
 * ```
 */
export async function sendKeyed(
  tool: CatalogTool,
  args: Record<string, unknown>,
  session: SessionBudget,
  options: KeyedCallOptions,
): Promise<Response> {
  const price = tool.price ?? 0n
  if (options.maxPrice !== undefined && price > options.maxPrice) {
    throw new PaymentError(
      'PRICE_ABOVE_MAX',
      `This call costs ${formatAmount(price)} USDC, more than the maximum of ${formatAmount(options.maxPrice)} USDC per call.`,
      { details: { amount: price.toString(), maxPrice: options.maxPrice.toString() } },
    )
  }
  const hold = session.reserve(tool.name, price)
  let response: Response
  try {
    response = await options.fetch(
      new Request(tool.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${options.apiKey}`,
        },
        body: JSON.stringify({ ...args, ...tool.fixed }),
      }),
    )
  } catch (error) {
    // No answer: the credit may have been debited.
    hold.settle()
    throw error
  }
  if (response.ok) hold.settle()
  else hold.release()
  return response
}
