/**
 * The Resend family: `POST /emails` with a bearer key. The paid call's id is sent as
 * `Idempotency-Key`, so a retried request never sends the e-mail twice.
 *
 * @module
 */
import { bearerJson } from './openai.js'
import type { Family, Operation } from './upstream.js'

/** `POST /emails` with from, to, subject, html, text. */
export const send: Operation = {
  request: (body, ctx) =>
    new Request(`${ctx.baseUrl}/emails`, {
      method: 'POST',
      headers: {
        ...bearerJson(ctx),
        ...(ctx.requestId ? { 'idempotency-key': ctx.requestId.slice(0, 256) } : {}),
      },
      body: JSON.stringify({
        from: body.from,
        to: body.to,
        subject: body.subject,
        ...(body.html === undefined ? {} : { html: body.html }),
        ...(body.text === undefined ? {} : { text: body.text }),
      }),
    }),
}

/** `POST /emails/batch` with the `emails` array (up to 100), under one Idempotency-Key. */
export const batch: Operation = {
  request: (body, ctx) =>
    new Request(`${ctx.baseUrl}/emails/batch`, {
      method: 'POST',
      headers: {
        ...bearerJson(ctx),
        ...(ctx.requestId ? { 'idempotency-key': ctx.requestId.slice(0, 256) } : {}),
      },
      body: JSON.stringify(body.emails),
    }),
}

/** The Resend family module. */
export const resend: Family = {
  id: 'resend',
  timeoutMs: 15_000,
  operations: { send, batch },
}
