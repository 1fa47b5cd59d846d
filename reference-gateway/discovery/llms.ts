/**
 * `/llms.txt`: a usage guide an LLM agent can follow — how to pay in both dialects, then every
 * endpoint with its price and an example body.
 *
 * @module
 */
import { type Catalog, examplePathOf, priceText } from '../catalog/catalog.js'
import { baseOf, type DiscoveryOptions, defaultTitle } from './options.js'
import { testMoneyNotice } from './testMoney.js'

function testMoneySection(catalog: Catalog, options: DiscoveryOptions): string[] {
  if (options.testMoney === undefined) return []
  const notice = testMoneyNotice(catalog, {
    publicBaseUrl: options.publicBaseUrl,
    ledgerUrl: options.testMoney.ledgerUrl,
  })
  return [
    '',
    `**${notice.headline}**`,
    '',
    'Pay this gateway with test USDC from its ledger (the `tollgate` CLI from the `tollgate` package):',
    '',
    '```sh',
    ...notice.commands,
    '```',
  ]
}

/**
 * Generates `/llms.txt` (Markdown).
 *
 * @example
 * ```ts
 * const text = llmsTxt(catalog, { publicBaseUrl, payTo, network: 'sui:mainnet', asset })
 * ```
 */
export function llmsTxt(catalog: Catalog, options: DiscoveryOptions): string {
  const base = baseOf(options)
  const lines: string[] = [
    `# ${options.title ?? defaultTitle}`,
    '',
    `> Paid HTTP endpoints in front of AI, web-data, search and e-mail APIs. Each call is paid per request in USDC on \`${options.network}\` (asset \`${options.asset}\`, recipient \`${options.payTo}\`). No account, no API key, no subscription.`,
    ...testMoneySection(catalog, options),
    '',
    '## How to call an endpoint',
    '',
    '1. `POST` the JSON body (`Content-Type: application/json`) to the endpoint URL. Every body is required and is validated first: an invalid body answers 400 naming the field, and nothing is charged.',
    '2. Without payment the answer is **HTTP 402**. The body is the x402 envelope `{ "x402Version": 1, "error", "accepts": [ { "scheme": "exact", "network", "maxAmountRequired", "asset", "payTo", "resource", "maxTimeoutSeconds", "extra": { "challengeId" } } ] }`; the `WWW-Authenticate: Payment …` header carries the same challenge in the MPP dialect. `maxAmountRequired` is in base units (6 decimals: `20000` = 0.02 USDC).',
    '3. Pay in ONE of the two dialects and repeat the same request with the proof.',
    '',
    '### x402 (body dialect)',
    '',
    `- Build a Sui transaction that transfers at least \`maxAmountRequired\` of \`${options.asset}\` to \`payTo\`. Sign it; do NOT submit it.`,
    '- Send header `X-PAYMENT`: standard base64 of `{ "x402Version": 1, "scheme": "exact", "network": "' +
      options.network +
      '", "payload": { "challengeId": "<accepts[0].extra.challengeId>", "transaction": "<base64 transaction bytes>", "signature": "<base64 Sui signature>" } }`.',
    '- The gateway settles the transaction, checks its effects, serves the answer and returns `X-PAYMENT-RESPONSE` (base64 JSON with the settlement digest).',
    '',
    '### MPP (header dialect)',
    '',
    '- Read `WWW-Authenticate: Payment id="…", realm="…", method="sui", intent="charge", request="…", expires="…"`; `request` is base64url JSON `{ amount, currency, recipient, methodDetails: { network } }`.',
    '- Submit the transfer yourself, then send `Authorization: Payment <base64url JSON { "challenge": { …the challenge parameters… }, "payload": { "digest": "<transaction digest>", "signature": "<personal-message signature by the transaction sender over the JCS proof { domain, version: 1, method, intent, challengeId, amount, currency, recipient, digest }>" } }>`.',
    '- Success answers carry `Payment-Receipt`.',
    '',
    '### Guarantees',
    '',
    '- Each payment is used once (a replay answers 402). A payment for a call that fails upstream is refunded automatically: a failed call is not charged.',
    '- Streaming chat (`"stream": true`) answers server-sent events after settlement, ending `data: [DONE]`.',
    '- Media results (images, speech, music) are returned as `{ "url" }` entries on this gateway, kept for a limited time.',
    '',
    '## Discovery documents',
    '',
    `- OpenAPI 3.1 with \`x-payment-info\` on every priced operation: ${base}/openapi.json`,
    `- x402 manifest: ${base}/.well-known/x402.json`,
    `- Service catalog (JSON): ${base}/api/services`,
    '',
    '## Endpoints',
  ]
  for (const service of catalog.services) {
    lines.push('', `### ${service.name} (\`/${service.segment}\`): ${service.summary}`, '')
    for (const endpoint of service.endpoints) {
      const url = `${base}${endpoint.path}`
      if (endpoint.kind === 'free') {
        lines.push(`- \`GET ${url}\`: free. ${endpoint.summary}.`)
        continue
      }
      lines.push(
        `- \`POST ${url}\`: ${priceText(endpoint)} USDC. ${endpoint.summary}. Body (${endpoint.shape.name}): ${endpoint.shape.description}.`,
      )
      for (const [name, param] of Object.entries(endpoint.pathParams ?? {})) {
        lines.push(
          `  Path parameter \`{${name}}\`: ${param.description}; example \`${base}${examplePathOf(endpoint)}\``,
        )
      }
      lines.push(`  Example body: \`${JSON.stringify(endpoint.shape.example)}\``)
    }
  }
  lines.push('')
  return lines.join('\n')
}
