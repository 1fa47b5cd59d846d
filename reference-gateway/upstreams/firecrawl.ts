/**
 * The Firecrawl family (v1): scrape and map answer at once; crawl and extract start a job that is
 * polled (`GET /crawl/<id>`, `GET /extract/<id>`) until it completes, within the family timeout.
 *
 * @module
 */
import { failed, jsonResult, readJson } from './http.js'
import { bearerJson, postJson } from './openai.js'
import type { Family, Operation, OperationContext, UpstreamResult } from './upstream.js'

/** Pages a paid crawl covers at most. */
export const crawlPageLimit = 10

/** Wait between job polls, in milliseconds. */
export const pollIntervalMs = 2000

/** `POST /scrape` → markdown and metadata. */
export const scrape: Operation = {
  request: (body, ctx) => postJson(ctx, '/scrape', { url: body.url, formats: ['markdown'] }),
}

/** `POST /map` → the site's links. */
export const map: Operation = {
  request: (body, ctx) => postJson(ctx, '/map', { url: body.url }),
}

/** `POST /crawl` (at most {@link crawlPageLimit} pages), then the job polled to completion. */
export const crawl: Operation = {
  request: (body, ctx) =>
    postJson(ctx, '/crawl', {
      url: body.url,
      limit: crawlPageLimit,
      scrapeOptions: { formats: ['markdown'] },
    }),
  response: (answer, ctx) => pollJob(answer, ctx, 'crawl'),
}

/** `POST /extract` with `urls: [url]` and the optional schema, then the job polled to completion. */
export const extract: Operation = {
  request: (body, ctx) =>
    postJson(ctx, '/extract', {
      urls: [body.url],
      ...(body.schema === undefined ? {} : { schema: body.schema }),
    }),
  response: (answer, ctx) => pollJob(answer, ctx, 'extract'),
}

const jobIdPattern = /^[A-Za-z0-9_-]{1,128}$/

async function pollJob(
  answer: Response,
  ctx: OperationContext,
  kind: 'crawl' | 'extract',
): Promise<UpstreamResult> {
  const started = await readJson(answer)
  if (started.status === 'failed') return started
  // A synchronous answer (already has data) is passed through.
  if (started.value.status === 'completed' || started.value.data !== undefined) {
    return jsonResult(started.value)
  }
  const id = started.value.id
  if (typeof id !== 'string' || !jobIdPattern.test(id)) {
    return failed(`upstream firecrawl ${kind} answered no job id`)
  }
  for (;;) {
    await ctx.sleep(pollIntervalMs)
    const poll = await ctx.fetch(
      new Request(`${ctx.baseUrl}/${kind}/${id}`, {
        method: 'GET',
        headers: bearerJson(ctx),
        signal: ctx.signal,
      }),
    )
    if (poll.status < 200 || poll.status > 299) {
      await poll.body?.cancel().catch(() => {})
      return failed(`upstream firecrawl ${kind} status answered ${poll.status}`, poll.status >= 500)
    }
    const state = await readJson(poll)
    if (state.status === 'failed') return state
    const status = state.value.status
    if (status === 'completed') return jsonResult(state.value)
    if (status === 'failed' || status === 'cancelled') {
      return failed(`upstream firecrawl ${kind} job ${status}`)
    }
  }
}

/** The Firecrawl family module. */
export const firecrawl: Family = {
  id: 'firecrawl',
  timeoutMs: 150_000,
  operations: { scrape, crawl, map, extract },
}
