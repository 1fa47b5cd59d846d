/**
 * The marketplace part of the catalog page (served when the marketplace is): the listed seller
 * endpoints with their state, price, seller and rating, and the activity feed, newest first, which
 * a small inline script keeps live from the gateway's server-sent events (`/v1/activity/stream`).
 * Suspended and delisted endpoints are not shown (docs/marketplace.md: a listing appears in the catalog while
 * it is listed). Every value is HTML-escaped on the server; the script writes text only
 * (`textContent`), never HTML.
 *
 * @module
 */
import { formatAmount } from 'tollgate'
import type { ActivityItem, ActivityStore } from '../marketplace/activity.js'
import { failuresBeforeSuspension } from '../marketplace/reprobe.js'
import type { Rating, ReviewStore } from '../marketplace/reviews.js'
import type { Listing, MarketplaceStore } from '../marketplace/store.js'
import { escapeHtml as e } from './html.js'

/** Listed endpoints shown on the page, newest first (all of them: `/v1/services`). */
export const pageListings = 100
/** Feed items rendered with the page, newest first; the live feed keeps at most {@link liveFeedItems}. */
export const pageActivity = 20
/** Feed items the page keeps while it updates live. */
export const liveFeedItems = 50

/** What the page shows of the marketplace. */
export type MarketplaceView = {
  /** Listed endpoints, newest first (at most {@link pageListings}). */
  listings: readonly Listing[]
  /** How many endpoints are listed in all. */
  total: number
  /** Sellers' ratings by address (sellers without reviews are absent). */
  ratings: ReadonlyMap<string, Rating>
  /** The newest feed items; undefined when the gateway serves no feed. */
  activity: readonly ActivityItem[] | undefined
}

/** Where {@link loadMarketplaceView} reads from. */
export type MarketplaceViewSources = {
  store: MarketplaceStore
  reviews?: Pick<ReviewStore, 'ratings'> | undefined
  activity?: Pick<ActivityStore, 'page'> | undefined
}

/**
 * Reads what the page shows: the newest listed endpoints, their sellers' ratings, the newest feed
 * items (three queries).
 *
 * @example
 * ```ts
 * const html = catalogPage(catalog, discovery, await loadMarketplaceView({ store, reviews, activity }))
 * ```
 */
export async function loadMarketplaceView(
  sources: MarketplaceViewSources,
): Promise<MarketplaceView> {
  const [{ listings, total }, activity] = await Promise.all([
    sources.store.searchListings({ state: 'listed', limit: pageListings, offset: 0 }),
    sources.activity?.page(pageActivity, 0),
  ])
  const ratings =
    sources.reviews === undefined
      ? new Map<string, Rating>()
      : await sources.reviews.ratings(listings.map((l) => l.seller))
  return { listings, total, ratings, activity: activity?.items }
}

/**
 * The handler of `/`: the page with the marketplace as it is now (without `sources`, or when reading
 * it fails — reported to `onError` — the page without it).
 *
 * @example
 * ```ts
 * app.get('/', catalogPageRoute(catalogPageRenderer(catalog, discovery), { store, reviews, activity }))
 * ```
 */
export function catalogPageRoute(
  render: (marketplace?: MarketplaceView) => string,
  sources: MarketplaceViewSources | undefined,
  onError: (error: unknown) => void = () => {},
): () => Promise<Response> {
  const headers = { 'content-type': 'text/html; charset=utf-8' }
  return async () => {
    let view: MarketplaceView | undefined
    if (sources !== undefined) {
      try {
        view = await loadMarketplaceView(sources)
      } catch (error) {
        onError(error)
      }
    }
    return new Response(render(view), { headers })
  }
}

/** `0x1234…cdef`: an address or digest shortened for display (the full value in `title`). */
export function shortId(value: string): string {
  return value.length > 14 ? `${value.slice(0, 6)}…${value.slice(-4)}` : value
}

const code = (value: string) => `<code title="${e(value)}">${e(shortId(value))}</code>`

/** A listing's state as the page shows it: `listed`, with failed re-probes since the last pass. */
export function listingStateText(listing: Pick<Listing, 'state' | 'consecutiveFailures'>): string {
  const failed = listing.consecutiveFailures
  if (listing.state !== 'listed' || failed === 0) return listing.state
  return `listed (${failed} of ${failuresBeforeSuspension} re-probes failed)`
}

/**
 * A seller's rating as the page shows it: the value-weighted average, from how many distinct
 * buyers, and how many reviews there are in all.
 */
export function ratingText(rating: Rating | undefined): string {
  if (rating === undefined) return 'no reviews yet'
  const reviews = `${rating.count} ${rating.count === 1 ? 'review' : 'reviews'}`
  if (rating.average === null) return `not rated yet (${reviews} below the minimum value)`
  return `★ ${rating.average.toFixed(2)} from ${rating.buyers} ${rating.buyers === 1 ? 'buyer' : 'buyers'} (${reviews})`
}

/** The section of listed seller endpoints (in `<main>`: the search and tag filter apply). */
export function sellersSectionHtml(view: MarketplaceView, base: string): string {
  if (view.listings.length === 0) return ''
  const rows = view.listings.map((l) => {
    const price = formatAmount(l.price)
    const tags = l.tags.map((t) => `<span class="tag">${e(t)}</span>`).join('')
    const search = `${l.name} ${l.description} ${l.url} ${l.tags.join(' ')} ${l.seller}`
    const profile = `${base}/v1/agent/${l.seller}`
    return `<tr data-listing="${e(l.id)}" data-tags="${e(l.tags.join(' '))}" data-search="${e(search.toLowerCase())}"><td><strong class="name">${e(l.name)}</strong><br><code>${e(l.method)} ${e(l.url)}</code></td><td class="price" data-price="${e(price)}">${e(price)} USDC</td><td class="state" data-state="${e(l.state)}">${e(listingStateText(l))}</td><td>${e(l.description)}${l.description === '' ? '' : ' '}${tags}<br>Seller <a href="${e(profile)}">${code(l.seller)}</a>, <span class="rating">${e(ratingText(view.ratings.get(l.seller)))}</span></td></tr>`
  })
  const shown =
    view.total > view.listings.length
      ? `The newest ${view.listings.length} of ${view.total}; all of them`
      : 'For programs'
  const more = `<p>${shown}: <a href="${e(`${base}/v1/services`)}">v1/services</a>, <a href="${e(`${base}/discovery/resources`)}">discovery/resources</a>.</p>`
  return `<section id="sellers"><h2>Listed seller endpoints</h2><p>Independent sellers, paid directly in the same two dialects. Each passed the four listing gates and is re-probed daily; after ${failuresBeforeSuspension} failed re-probes in a row it is suspended and not shown until a probe passes.</p>${more}<table><thead><tr><th>Endpoint</th><th>Price</th><th>State</th><th>Seller</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`
}

/** One feed item as HTML (the live script builds the same structure). */
function feedItemHtml(item: ActivityItem): string {
  const when = `${item.at.slice(0, 19).replace('T', ' ')} UTC`
  const resource = item.resource === null ? '' : ` for <code>${e(item.resource)}</code>`
  const via = item.source === 'gateway' ? 'through the gateway' : 'reported, found on the ledger'
  return `<li data-id="${e(item.id)}" data-at="${e(item.at)}" data-digest="${e(item.digest)}"><time datetime="${e(item.at)}">${e(when)}</time> <strong class="amount">${e(formatAmount(item.amount))} USDC</strong> from ${code(item.buyer)} to ${code(item.seller)}${resource} <small>${e(via)}</small></li>`
}

const liveScript = `
(function(){
var list=document.getElementById('feed');if(!list||!window.EventSource)return;
var empty=document.getElementById('feed-empty');
function short(v){return v.length>14?v.slice(0,6)+'\\u2026'+v.slice(-4):v}
function el(tag,text,cls){var n=document.createElement(tag);n.textContent=text;if(cls)n.className=cls;return n}
function code(v){var c=el('code',short(v));c.title=v;return c}
function usdc(a){var s=String(a);while(s.length<7)s='0'+s;return s.slice(0,-6)+'.'+s.slice(-6)+' USDC'}
function render(i){var li=document.createElement('li');li.dataset.id=i.id;li.dataset.at=i.at;li.dataset.digest=i.digest;
var t=el('time',i.at.slice(0,19).replace('T',' ')+' UTC');t.dateTime=i.at;
li.append(t,' ',el('strong',usdc(i.amount),'amount'),' from ',code(i.buyer),' to ',code(i.seller));
if(i.resource){li.append(' for ',el('code',i.resource))}
li.append(' ',el('small',i.source==='gateway'?'through the gateway':'reported, found on the ledger'));return li}
function add(i){if(typeof i!=='object'||!i||typeof i.id!=='string'||typeof i.at!=='string')return;
var items=list.children;for(var k=0;k<items.length;k++){if(items[k].dataset.id===i.id)return}
var li=render(i);var before=null;for(var j=0;j<items.length;j++){if(items[j].dataset.at<i.at){before=items[j];break}}
list.insertBefore(li,before);if(empty)empty.hidden=true;
while(list.children.length>${liveFeedItems})list.removeChild(list.lastElementChild)}
var source=new EventSource(list.dataset.stream);
source.addEventListener('activity',function(m){try{add(JSON.parse(m.data))}catch(x){}});
// On (re)connecting: what happened since the page was rendered.
source.addEventListener('open',function(){fetch(list.dataset.page).then(function(r){return r.json()}).then(function(p){(p.items||[]).forEach(add)}).catch(function(){})});
})();
`

/** The activity feed (after `<main>`, never filtered) and its live script; '' without a feed. */
export function activityHtml(view: MarketplaceView, base: string): string {
  if (view.activity === undefined) return ''
  const items = view.activity.map(feedItemHtml).join('')
  return `<aside id="activity" aria-labelledby="activity-title"><h2 id="activity-title">Activity</h2><p>Payments settled through the gateway and payments to listed sellers found on the ledger, newest first; this list updates live. JSON: <a href="${e(`${base}/v1/activity`)}">v1/activity</a>.</p><p id="feed-empty"${items === '' ? '' : ' hidden'}>No payments yet.</p><ol id="feed" aria-live="polite" data-stream="${e(`${base}/v1/activity/stream`)}" data-page="${e(`${base}/v1/activity?limit=${pageActivity}`)}">${items}</ol></aside>
<script>${liveScript}</script>`
}
