/**
 * Errors of the private inference API in the OpenAI envelope `{ error: { message, type, code, param } }`
 * (docs/inference.md, "Errors"), with stable codes and the statuses the official SDKs map to their
 * error classes: 401 `AuthenticationError`, 404 `NotFoundError`, 429 `RateLimitError`, 5xx
 * `InternalServerError`, 402 the SDK's generic `APIError` with status 402. Messages never carry a
 * key, a provider key or a body.
 *
 * @module
 */

/** Stable error codes of the inference API. */
export type InferenceErrorCode =
  | 'invalid_api_key'
  | 'insufficient_credit'
  | 'model_not_found'
  | 'rate_limit_exceeded'
  | 'invalid_request'
  | 'context_length_exceeded'
  | 'request_too_large'
  | 'upstream_failed'
  | 'upstream_timeout'
  | 'internal_error'
  | 'attestation_failed'
  | 'receipt_not_found'
  | 'session_not_found'

/** The HTTP status and OpenAI `type` of each code. */
export const inferenceErrors: Readonly<
  Record<InferenceErrorCode, { status: number; type: string }>
> = {
  invalid_api_key: { status: 401, type: 'invalid_request_error' },
  insufficient_credit: { status: 402, type: 'insufficient_credit' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  upstream_failed: { status: 502, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'server_error' },
  internal_error: { status: 500, type: 'server_error' },
  attestation_failed: { status: 502, type: 'server_error' },
  receipt_not_found: { status: 404, type: 'invalid_request_error' },
  session_not_found: { status: 404, type: 'invalid_request_error' },
}

/** The OpenAI error envelope. */
export type InferenceErrorBody = {
  error: { message: string; type: string; code: InferenceErrorCode; param: string | null }
}

/** The envelope of an error. */
export function errorBody(
  code: InferenceErrorCode,
  message: string,
  param: string | null = null,
): InferenceErrorBody {
  return { error: { message, type: inferenceErrors[code].type, code, param } }
}

/**
 * An error answer: the envelope with the code's status.
 *
 * @example
 * ```ts
 * return errorResponse('model_not_found', 'The model `x` does not exist.', { param: 'model' })
 * ```
 */
export function errorResponse(
  code: InferenceErrorCode,
  message: string,
  options: { param?: string | null | undefined; headers?: HeadersInit | undefined } = {},
): Response {
  const headers = new Headers(options.headers)
  headers.set('content-type', 'application/json; charset=utf-8')
  return new Response(JSON.stringify(errorBody(code, message, options.param ?? null)), {
    status: inferenceErrors[code].status,
    headers,
  })
}

const encoder = new TextEncoder()

/** The final `data:` event of a stream that failed after it started (docs/inference.md, "Errors"). */
export function streamErrorEvent(code: InferenceErrorCode, message: string): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(errorBody(code, message))}\n\n`)
}
