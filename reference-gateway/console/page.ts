/**
 * The console's page: a small HTML document that the bundled script (`client/main.ts`) fills in.
 * What the script needs to know about the gateway — its network, the USDC type, whom top-ups pay,
 * the credit packs on sale — is in a JSON block the page carries (`#console-config`): the page
 * checks the top-up's 402 against these before the wallet is asked to sign anything.
 *
 * @module
 */
import { escapeHtml } from '../discovery/html.js'

/** What the page tells its script. */
export type ConsolePageConfig = {
  /** The gateway's public origin (the sign-in domain, the `tollgate verify` URL). */
  origin: string
  /** The Wallet Standard chain, e.g. `sui:mainnet`. */
  chain: string
  /** The x402 network the top-ups are paid on. */
  network: string
  /** The USDC coin type the top-ups are paid in. */
  asset: string
  /** The address top-ups pay. */
  payTo: string
  /** The credit packs on sale: USDC decimals, base units, and the route that sells each. */
  topUps: readonly { usdc: string; units: string; path: string }[]
  /** True on the local ledger emulator: the money is not real. */
  testMoney: boolean
}

/** The Content-Security-Policy of the page: its own script and style only, no frames. */
export const consoleCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/**
 * Renders the page. `missing` is the one line shown instead of the console when its browser files
 * are not built.
 *
 * @example
 * ```ts
 * return c.html(consolePage(config))
 * ```
 */
export function consolePage(config: ConsolePageConfig, missing?: string): string {
  // JSON inside <script>: `<` escaped so no value can close the element.
  const json = JSON.stringify(config).replace(/</g, '\\u003c')
  const body =
    missing === undefined
      ? `<main id="console" aria-live="polite"><p>Loading the console…</p></main>
<noscript><p>The console needs JavaScript: it talks to your wallet in the page.</p></noscript>`
      : `<main id="console"><p role="alert">${escapeHtml(missing)}</p></main>`
  const notice = config.testMoney
    ? '<aside class="test-money" role="note"><strong>Test money.</strong> This gateway runs on a local ledger: payments here are not real.</aside>'
    : ''
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console · Tollgate</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script type="application/json" id="console-config">${json}</script>
<script type="module" src="/console/assets/console.js"></script>
</head>
<body>
<header>
<h1>Console</h1>
<p>Your API keys for the private inference API: sign in with a Sui wallet, create keys, pay credit in USDC from the wallet, and see what each key used. <a href="/">Catalog</a></p>
${notice}
</header>
${body}
</body>
</html>
`
}
