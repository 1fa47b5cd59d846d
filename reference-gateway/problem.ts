/**
 * The gateway's own error answers (the marketplace, reviews, escrowed jobs): an RFC 9457 problem
 * from the package's one error family, so that a code means the same here as on a paid route.
 *
 * @module
 */
import { PaymentError, type PaymentErrorCode } from 'tollgate'
import type { z } from 'zod'

/**
 * An `application/problem+json` answer for `code`, with the code's own status unless `status`
 * is given; `extra` members are added to the problem object.
 */
export function problem(
  code: PaymentErrorCode,
  message: string,
  options: { status?: number | undefined; extra?: Record<string, unknown> | undefined } = {},
): Response {
  const error = new PaymentError(
    code,
    message,
    options.status === undefined ? {} : { status: options.status },
  )
  return Response.json(
    { ...error.toProblem(), ...options.extra },
    { status: error.status, headers: { 'content-type': 'application/problem+json' } },
  )
}

/**
 * A 400 `invalid_request_body` naming the first issue of a failed schema check, as
 * `<prefix>.<path>: <message>` (`body` when neither is given).
 */
export function schemaProblem(error: z.ZodError, prefix: string): Response {
  const issue = error.issues[0]
  const where = [prefix, ...(issue?.path ?? [])].filter((part) => part !== '').join('.')
  return problem('invalid_request_body', `${where || 'body'}: ${issue?.message ?? 'invalid'}`)
}
