/**
 * The Brave Search family: the QUERY body becomes the query string of a `GET /<kind>/search` with
 * `X-Subscription-Token`. Summarized search takes two calls: a web search with `summary=1` yields a
 * summarizer key, then `GET /summarizer/search?key=…` answers the summary.
 *
 * @module
 */
import { failed, passJson, readJson } from './http.js'
import type { Family, Operation, OperationContext, UpstreamFailed } from './upstream.js'

/** The search kinds the catalog maps to. */
export const searchKinds = ['web', 'images', 'news', 'videos', 'summarizer'] as const

function get(ctx: OperationContext, kind: string, query: Record<string, string>): Request {
  return new Request(`${ctx.baseUrl}/${kind}/search?${new URLSearchParams(query)}`, {
    method: 'GET',
    headers: { 'x-subscription-token': ctx.apiKey, accept: 'application/json' },
  })
}

/** `GET /<kind>/search?q=…` (`params.kind` from the catalog mapping). */
export const search: Operation = {
  request(body, ctx): Request | UpstreamFailed {
    const kind = ctx.params.kind ?? 'web'
    if (!(searchKinds as readonly string[]).includes(kind))
      return failed(`unknown search kind ${kind}`)
    const q = String(body.q)
    return kind === 'summarizer' ? get(ctx, 'web', { q, summary: '1' }) : get(ctx, kind, { q })
  },
  async response(answer, ctx) {
    if (ctx.params.kind !== 'summarizer') return passJson(answer)
    const web = await readJson(answer)
    if (web.status === 'failed') return web
    const key = (web.value.summarizer as { key?: unknown } | undefined)?.key
    if (typeof key !== 'string' || key === '')
      return failed('no summary is available for this query')
    const summary = await ctx.fetch(
      new Request(get(ctx, 'summarizer', { key, entity_info: '1' }), { signal: ctx.signal }),
    )
    if (summary.status < 200 || summary.status > 299) {
      await summary.body?.cancel().catch(() => {})
      return failed(`upstream brave summarizer answered ${summary.status}`, summary.status >= 500)
    }
    return passJson(summary)
  },
}

/** The Brave Search family module. */
export const brave: Family = {
  id: 'brave',
  timeoutMs: 15_000,
  operations: { search },
}
