/**
 * The human catalog page at `/`: services, endpoints, prices and example requests, server-rendered
 * HTML with no script and no build step. Every catalog value is HTML-escaped.
 *
 * @module
 */
import { type Catalog, paidEntries, priceText } from '../catalog/catalog.js'
import { baseOf, type DiscoveryOptions, defaultTitle } from './options.js'

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}

/** Quotes a string for a POSIX shell (single quotes). */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

/** The example `curl` request of an endpoint (unpaid: it answers the 402 with the terms). */
export function exampleCurl(url: string, body: unknown): string {
  return `curl -i -X POST ${shellQuote(url)} \\\n  -H 'content-type: application/json' \\\n  -d ${shellQuote(JSON.stringify(body))}`
}

const style = `
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:1.5rem;color:#1b1f24}
h1{margin:.2rem 0}header p{color:#4b5563;margin:.3rem 0 1rem}
section{border-top:1px solid #e5e7eb;padding:1rem 0}
h2{margin:.2rem 0;font-size:1.25rem}h2 code{font-size:.9rem;color:#6b7280}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th:nth-child(1){width:34%}th:nth-child(2){width:12%}th:nth-child(3){width:12%}
td code{word-break:break-all}th,td{text-align:left;padding:.35rem .5rem;vertical-align:top}
th{font-size:.8rem;color:#6b7280;text-transform:uppercase}tr+tr td{border-top:1px solid #f3f4f6}
td.price{white-space:nowrap;font-variant-numeric:tabular-nums}
.tag{display:inline-block;background:#eef2ff;color:#3730a3;border-radius:.6rem;padding:0 .45rem;margin-right:.2rem;font-size:.75rem}
pre{background:#f6f8fa;padding:.6rem;white-space:pre-wrap;word-break:break-all;font-size:.8rem;margin:.3rem 0}
details summary{cursor:pointer;color:#2563eb}
nav a{margin-right:1rem}
`

/**
 * Renders the catalog page.
 *
 * @example
 * ```ts
 * return new Response(catalogPage(catalog, options), { headers: { 'content-type': 'text/html; charset=utf-8' } })
 * ```
 */
export function catalogPage(catalog: Catalog, options: DiscoveryOptions): string {
  const base = baseOf(options)
  const title = options.title ?? defaultTitle
  const e = escapeHtml
  const paid = paidEntries(catalog).length
  const sections = catalog.services.map((service) => {
    const rows = service.endpoints.map((endpoint) => {
      const url = `${base}${endpoint.path}`
      const tags = endpoint.tags.map((t) => `<span class="tag">${e(t)}</span>`).join('')
      if (endpoint.kind === 'free') {
        return `<tr><td><code>GET ${e(endpoint.path)}</code></td><td class="price">free</td><td>${tags}</td><td>${e(endpoint.summary)}<details><summary>Example request</summary><pre>${e(`curl ${shellQuote(url)}`)}</pre></details></td></tr>`
      }
      const price = priceText(endpoint)
      return `<tr id="${e(endpoint.path)}"><td><code>POST ${e(endpoint.path)}</code></td><td class="price" data-price="${e(price)}">${e(price)} USDC</td><td>${tags}</td><td>${e(endpoint.summary)} <small>(${e(endpoint.shape.name)})</small><details><summary>Example request</summary><pre>${e(exampleCurl(url, endpoint.shape.example))}</pre></details></td></tr>`
    })
    return `<section id="${e(service.segment)}"><h2>${e(service.name)} <code>/${e(service.segment)}</code></h2><p>${e(service.summary)}</p><table><thead><tr><th>Endpoint</th><th>Price</th><th>Tags</th><th>What it does</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`
  })
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title>
<style>${style}</style>
</head>
<body>
<header>
<h1>${e(title)}</h1>
<p>${catalog.services.length} services, ${paid} paid endpoints. Pay per request in USDC on <code>${e(options.network)}</code>: no account, no API key. A request without payment answers HTTP 402 with the terms in both dialects (x402 body, MPP header); pay and repeat the request. A failed call is refunded.</p>
<nav><a href="${e(`${base}/llms.txt`)}">llms.txt</a><a href="${e(`${base}/openapi.json`)}">openapi.json</a><a href="${e(`${base}/.well-known/x402.json`)}">x402.json</a><a href="${e(`${base}/api/services`)}">api/services</a></nav>
</header>
<main>
${sections.join('\n')}
</main>
</body>
</html>
`
}
