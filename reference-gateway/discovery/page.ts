/**
 * The human catalog page at `/`: services, endpoints, prices and example requests, server-rendered
 * HTML with no build step. Every catalog value is HTML-escaped. A small inline script adds a text
 * search and a tag filter (without it every endpoint shows); below 640 px each endpoint is a card,
 * so the page never scrolls sideways on a phone. With the marketplace, the page also lists the
 * listed seller endpoints and shows the live activity feed (`pageMarketplace.ts`).
 *
 * @module
 */
import {
  type Catalog,
  catalogTags,
  examplePathOf,
  paidEntries,
  priceText,
} from '../catalog/catalog.js'
import { escapeHtml } from './html.js'
import { baseOf, type DiscoveryOptions, defaultTitle } from './options.js'
import { activityHtml, type MarketplaceView, sellersSectionHtml } from './pageMarketplace.js'
import { testMoneyNotice } from './testMoney.js'

export { escapeHtml } from './html.js'

/** Quotes a string for a POSIX shell (single quotes). */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

/** The example `curl` request of an endpoint (unpaid: it answers the 402 with the terms). */
export function exampleCurl(url: string, body: unknown): string {
  return `curl -i -X POST ${shellQuote(url)} \\\n  -H 'content-type: application/json' \\\n  -d ${shellQuote(JSON.stringify(body))}`
}

const style = `
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:1.5rem;color:#1b1f24;overflow-wrap:anywhere}
h1{margin:.2rem 0}header p{color:#4b5563;margin:.3rem 0 1rem}
section{border-top:1px solid #e5e7eb;padding:1rem 0}
h2{margin:.2rem 0;font-size:1.25rem}h2 code{font-size:.9rem;color:#6b7280}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th:nth-child(1){width:34%}th:nth-child(2){width:12%}th:nth-child(3){width:14%}
td code{word-break:break-all}th,td{text-align:left;padding:.35rem .5rem;vertical-align:top}
th{font-size:.8rem;color:#6b7280;text-transform:uppercase}tr+tr td{border-top:1px solid #f3f4f6}
td.price{white-space:nowrap;font-variant-numeric:tabular-nums}
.tag{display:inline-block;background:#eef2ff;color:#3730a3;border-radius:.6rem;padding:0 .45rem;margin:0 .2rem .2rem 0;font-size:.75rem}
pre{background:#f6f8fa;padding:.6rem;white-space:pre-wrap;word-break:break-all;font-size:.8rem;margin:.3rem 0;max-width:100%}
details summary{cursor:pointer;color:#2563eb}
.test-money{background:#fef2f2;border:2px solid #dc2626;color:#7f1d1d;border-radius:.4rem;padding:.6rem .8rem;margin:.6rem 0}
.test-money p{color:#7f1d1d;margin:.3rem 0}
nav{display:flex;flex-wrap:wrap;gap:.3rem 1rem}
.filters{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:1rem 0;position:sticky;top:0;background:#fff;padding:.5rem 0;z-index:1}
.filters input{flex:1 1 14rem;min-width:0;font:inherit;padding:.4rem .6rem;border:1px solid #d1d5db;border-radius:.4rem}
.filters button{font:inherit;font-size:.8rem;border:1px solid #c7d2fe;background:#fff;color:#3730a3;border-radius:1rem;padding:.15rem .6rem;cursor:pointer}
.filters button[aria-pressed=true]{background:#3730a3;color:#fff}
#count{font-size:.8rem;color:#6b7280}
td.state{font-size:.85rem}#activity{border-top:1px solid #e5e7eb;padding:1rem 0}
#feed{list-style:none;padding:0;margin:0}#feed li{padding:.3rem 0;border-top:1px solid #f3f4f6}
#feed time{color:#6b7280;font-size:.8rem;font-variant-numeric:tabular-nums}#feed small{color:#6b7280}
[hidden]{display:none!important}
@media (max-width:640px){
body{padding:.8rem}
table,thead,tbody,tr,td{display:block;width:100%}
thead{display:none}
tr{padding:.5rem 0}tr+tr{border-top:1px solid #e5e7eb}tr+tr td{border-top:0}
td{padding:.1rem 0}
}
`

const script = `
(function(){
var box=document.querySelector('.filters');box.hidden=false;
var input=box.querySelector('input');var buttons=box.querySelectorAll('button');var tag='';
var rows=document.querySelectorAll('tr[data-tags]');var count=document.getElementById('count');
function apply(){var q=input.value.trim().toLowerCase();var shown=0;
rows.forEach(function(tr){var ok=(!tag||(' '+tr.dataset.tags+' ').indexOf(' '+tag+' ')>=0)&&(!q||tr.dataset.search.indexOf(q)>=0);tr.hidden=!ok;if(ok)shown++});
document.querySelectorAll('main section').forEach(function(s){s.hidden=!s.querySelector('tr[data-tags]:not([hidden])')});
count.textContent=shown+' of '+rows.length+' endpoints';}
input.addEventListener('input',apply);
buttons.forEach(function(b){b.addEventListener('click',function(){tag=b.dataset.tag===tag?'':b.dataset.tag;buttons.forEach(function(o){o.setAttribute('aria-pressed',String(o.dataset.tag===tag))});apply()})});
apply();})();
`

function testMoneyHtml(catalog: Catalog, options: DiscoveryOptions): string {
  if (options.testMoney === undefined) return ''
  const notice = testMoneyNotice(catalog, {
    publicBaseUrl: options.publicBaseUrl,
    ledgerUrl: options.testMoney.ledgerUrl,
  })
  return `<aside class="test-money" role="note"><strong>${escapeHtml(notice.headline)}</strong><p>Pay it with test USDC from its ledger:</p><pre>${escapeHtml(notice.commands.join('\n'))}</pre></aside>\n`
}

/**
 * Renders the catalog page; with `marketplace`, also the listed seller endpoints and the live
 * activity feed.
 *
 * @example
 * ```ts
 * return new Response(catalogPage(catalog, options), { headers: { 'content-type': 'text/html; charset=utf-8' } })
 * ```
 */
export function catalogPage(
  catalog: Catalog,
  options: DiscoveryOptions,
  marketplace?: MarketplaceView,
): string {
  return catalogPageRenderer(catalog, options)(marketplace)
}

/**
 * Prepares the catalog's part of the page once; the function it returns renders the page with the
 * marketplace's current state (or without it).
 *
 * @example
 * ```ts
 * const render = catalogPageRenderer(catalog, options)
 * app.get('/', async (c) => c.html(render(await loadMarketplaceView({ store }))))
 * ```
 */
export function catalogPageRenderer(
  catalog: Catalog,
  options: DiscoveryOptions,
): (marketplace?: MarketplaceView) => string {
  const base = baseOf(options)
  const title = options.title ?? defaultTitle
  const e = escapeHtml
  const paid = paidEntries(catalog).length
  const used = catalogTags.filter((tag) =>
    catalog.services.some((s) => s.endpoints.some((endpoint) => endpoint.tags.includes(tag))),
  )
  const sections = catalog.services.map((service) => {
    const rows = service.endpoints.map((endpoint) => {
      const url = `${base}${examplePathOf(endpoint)}`
      const tags = endpoint.tags.map((t) => `<span class="tag">${e(t)}</span>`).join('')
      const data = `data-tags="${e(endpoint.tags.join(' '))}" data-search="${e(`${service.name} ${endpoint.path} ${endpoint.summary} ${endpoint.tags.join(' ')}`.toLowerCase())}"`
      if (endpoint.kind === 'free') {
        return `<tr ${data}><td><code>GET ${e(endpoint.path)}</code></td><td class="price">free</td><td>${tags}</td><td>${e(endpoint.summary)}<details><summary>Example request</summary><pre>${e(`curl ${shellQuote(url)}`)}</pre></details></td></tr>`
      }
      const price = priceText(endpoint)
      return `<tr id="${e(endpoint.path)}" ${data}><td><code>POST ${e(endpoint.path)}</code></td><td class="price" data-price="${e(price)}">${e(price)} USDC</td><td>${tags}</td><td>${e(endpoint.summary)} <small>(${e(endpoint.shape.name)})</small><details><summary>Example request</summary><pre>${e(exampleCurl(url, endpoint.shape.example))}</pre></details></td></tr>`
    })
    return `<section id="${e(service.segment)}"><h2>${e(service.name)} <code>/${e(service.segment)}</code></h2><p>${e(service.summary)}</p><table><thead><tr><th>Endpoint</th><th>Price</th><th>Tags</th><th>What it does</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`
  })
  const head = `<!doctype html>
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
<p>${catalog.services.length} services, ${paid} paid endpoints`
  const intro = `. Pay per request in USDC on <code>${e(options.network)}</code>: no account, no API key. A request without payment answers HTTP 402 with the terms in both dialects (x402 body, MPP header); pay and repeat the request. A failed call is refunded.</p>
${testMoneyHtml(catalog, options)}<nav><a href="${e(`${base}/llms.txt`)}">llms.txt</a><a href="${e(`${base}/openapi.json`)}">openapi.json</a><a href="${e(`${base}/.well-known/x402.json`)}">x402.json</a><a href="${e(`${base}/api/services`)}">api/services</a></nav>
<div class="filters" role="search" hidden><input type="search" placeholder="Search endpoints" aria-label="Search endpoints">${used.map((t) => `<button type="button" data-tag="${e(t)}" aria-pressed="false">${e(t)}</button>`).join('')}<span id="count" aria-live="polite"></span></div>
</header>
<main>
${sections.join('\n')}
`
  return (marketplace) => {
    if (marketplace === undefined)
      return `${head}${intro}</main>\n<script>${script}</script>\n</body>\n</html>\n`
    const listed = `, ${marketplace.total} listed seller ${marketplace.total === 1 ? 'endpoint' : 'endpoints'}`
    return `${head}${listed}${intro}${sellersSectionHtml(marketplace, base)}\n</main>\n<script>${script}</script>\n${activityHtml(marketplace, base)}\n</body>\n</html>\n`
  }
}
