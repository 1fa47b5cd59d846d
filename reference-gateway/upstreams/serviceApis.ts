/**
 * JSON families with custom mapping: Judge0 (code and stdin base64-encoded, `wait=true`, outputs
 * decoded), Lob (Basic `key:`, the paid call's id as `Idempotency-Key`, so a retry never mails
 * twice), Pushover (the app token in the body; never retried), VirusTotal (a URL or hash report
 * summarised; an unknown URL submitted and answered queued) and Short.io (a raw key; the answer
 * reduced to the short link).
 *
 * @module
 */
import { failed, jsonResult, readJson } from './http.js'
import { defined, getWithQuery, listAnswer, postJsonWith } from './kit.js'
import type { Family, OperationContext, UpstreamResult } from './upstream.js'

const b64 = (value: unknown) =>
  value === undefined ? undefined : Buffer.from(String(value), 'utf8').toString('base64')
const unb64 = (value: unknown) =>
  typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : value

function rapid(ctx: OperationContext) {
  return { 'x-rapidapi-key': ctx.apiKey, 'x-rapidapi-host': new URL(ctx.baseUrl).host }
}

/** The Judge0 CE family (through RapidAPI). */
export const judge0: Family = {
  id: 'judge0',
  timeoutMs: 30_000,
  operations: {
    submit: {
      request: (b, ctx) =>
        postJsonWith(
          ctx,
          '/submissions?base64_encoded=true&wait=true',
          defined({
            source_code: b64(b.source_code),
            language_id: b.language_id,
            stdin: b64(b.stdin),
            expected_output: b64(b.expected_output),
            cpu_time_limit: b.cpu_time_limit,
            memory_limit: b.memory_limit,
          }),
          rapid(ctx),
        ),
      async response(answer) {
        const read = await readJson(answer)
        if (read.status === 'failed') return read
        const v = read.value
        return jsonResult({
          token: v.token,
          status: v.status,
          stdout: unb64(v.stdout),
          stderr: unb64(v.stderr),
          compile_output: unb64(v.compile_output),
          message: unb64(v.message),
          time: v.time,
          memory: v.memory,
        })
      },
    },
    languages: {
      request: (_b, ctx) => getWithQuery(ctx, '/languages', {}, rapid(ctx)),
      response: (answer) => listAnswer(answer, 'languages'),
    },
  },
}

/** The Lob family: postcards, letters and US address verification. */
export const lob: Family = {
  id: 'lob',
  timeoutMs: 30_000,
  operations: Object.fromEntries(
    (
      [
        ['postcard', '/postcards'],
        ['letter', '/letters'],
        ['verify', '/us_verifications'],
      ] as const
    ).map(([operation, path]) => [
      operation,
      {
        request: (b: Record<string, unknown>, ctx: OperationContext) =>
          postJsonWith(ctx, path, b, {
            authorization: `Basic ${Buffer.from(`${ctx.apiKey}:`).toString('base64')}`,
            ...(ctx.requestId ? { 'idempotency-key': ctx.requestId.slice(0, 256) } : {}),
          }),
      },
    ]),
  ),
}

/** The Pushover family: one message, answered `{ status: 'sent', request }`. */
export const pushover: Family = {
  id: 'pushover',
  timeoutMs: 15_000,
  // A push has an effect and Pushover takes no idempotency key: never sent twice.
  attempts: 1,
  operations: {
    push: {
      request: (b, ctx) => postJsonWith(ctx, '/messages.json', { ...b, token: ctx.apiKey }, {}),
      async response(answer) {
        const read = await readJson(answer)
        if (read.status === 'failed') return read
        if (read.value.status !== 1) return failed('upstream pushover did not accept the message')
        return jsonResult({ status: 'sent', request: read.value.request })
      },
    },
  },
}

type Attributes = Record<string, unknown>

function summary(kind: 'url' | 'file', data: { id?: unknown; attributes?: Attributes }) {
  const a = data.attributes ?? {}
  return defined({
    status: 'found',
    type: kind,
    id: data.id,
    reputation: a.reputation,
    last_analysis_date: a.last_analysis_date,
    last_analysis_stats: a.last_analysis_stats,
    categories: a.categories,
    ...(kind === 'url'
      ? { url: a.url, title: a.title, final_url: a.last_final_url }
      : {
          meaningful_name: a.meaningful_name,
          type_description: a.type_description,
          size: a.size,
          sha256: a.sha256,
        }),
  })
}

async function report(
  answer: Response,
  ctx: OperationContext,
  body: Record<string, unknown>,
): Promise<UpstreamResult> {
  const kind = body.hash === undefined ? 'url' : 'file'
  if (answer.status === 404) {
    await answer.body?.cancel().catch(() => {})
    if (kind === 'file') return jsonResult({ status: 'not_found', type: 'file' })
    // Unknown URL: submit it for analysis.
    const submitted = await ctx.fetch(
      new Request(`${ctx.baseUrl}/urls`, {
        method: 'POST',
        headers: {
          'x-apikey': ctx.apiKey,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: new URLSearchParams({ url: String(body.url) }).toString(),
        signal: ctx.signal,
      }),
    )
    if (submitted.status < 200 || submitted.status > 299) {
      await submitted.body?.cancel().catch(() => {})
      return failed(
        `upstream virustotal submit answered ${submitted.status}`,
        submitted.status >= 500,
      )
    }
    const read = await readJson(submitted)
    if (read.status === 'failed') return read
    const id = (read.value.data as { id?: unknown } | undefined)?.id
    return jsonResult({ status: 'queued', type: 'url', analysis_id: id })
  }
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  return jsonResult(summary(kind, (read.value.data ?? {}) as { attributes?: Attributes }))
}

/** The URL id VirusTotal uses: the URL in unpadded base64url. */
export function virusTotalUrlId(url: string): string {
  return Buffer.from(url, 'utf8').toString('base64url')
}

/** The VirusTotal v3 family. */
export const virustotal: Family = {
  id: 'virustotal',
  timeoutMs: 20_000,
  operations: {
    scan: {
      accepts: [404],
      request: (b, ctx) =>
        getWithQuery(
          ctx,
          b.hash === undefined
            ? `/urls/${virusTotalUrlId(String(b.url))}`
            : `/files/${String(b.hash).toLowerCase()}`,
          {},
          { 'x-apikey': ctx.apiKey },
        ),
      response: report,
    },
  },
}

/** The Short.io family: a public link on the operator's domain (`params.domain`). */
export const shortio: Family = {
  id: 'shortio',
  timeoutMs: 15_000,
  operations: {
    shorten: {
      request(b, ctx) {
        const domain = ctx.params.domain
        if (!domain) return failed('no short-link domain is configured')
        return postJsonWith(
          ctx,
          '/links/public',
          defined({ domain, originalURL: b.url, path: b.path, title: b.title }),
          { authorization: ctx.apiKey },
        )
      },
      async response(answer) {
        const read = await readJson(answer)
        if (read.status === 'failed') return read
        const v = read.value
        return jsonResult({ short_url: v.shortURL, original_url: v.originalURL, id: v.idString })
      },
    },
  },
}
