/**
 * The two pieces of x402 version 1 the console's page needs, written small: reading the `exact`
 * offer for our network from a 402 body, and encoding the `X-PAYMENT` header. The package's own
 * `X402` namespace does both with zod schemas, which would more than double the page's script;
 * the gateway checks the header with those schemas when it arrives.
 *
 * @module
 */

/** The fields of an x402 offer the page checks and pays. */
export type Offer = {
  network: string
  payTo: string
  asset: string
  maxAmountRequired: string
  challengeId: string
}

const text = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max

/**
 * The `exact` offer for `network` in a 402 body, or undefined when the body has none (or is not an
 * x402 version 1 envelope).
 */
export function exactOffer(body: unknown, network: string): Offer | undefined {
  if (body === null || typeof body !== 'object') return undefined
  const { x402Version, accepts } = body as { x402Version?: unknown; accepts?: unknown }
  if (x402Version !== 1 || !Array.isArray(accepts)) return undefined
  for (const entry of accepts.slice(0, 16) as Record<string, unknown>[]) {
    if (entry?.scheme !== 'exact' || entry.network !== network) continue
    const challengeId = (entry.extra as { challengeId?: unknown } | undefined)?.challengeId
    if (
      text(entry.payTo, 66) &&
      text(entry.asset, 256) &&
      typeof entry.maxAmountRequired === 'string' &&
      /^[1-9][0-9]{0,38}$/.test(entry.maxAmountRequired) &&
      text(challengeId, 128)
    ) {
      return {
        network,
        payTo: entry.payTo,
        asset: entry.asset,
        maxAmountRequired: entry.maxAmountRequired,
        challengeId,
      }
    }
  }
  return undefined
}

/** The `X-PAYMENT` header: standard base64 of the payment's JSON. */
export function xPaymentHeader(offer: Offer, signed: { bytes: string; signature: string }): string {
  const json = JSON.stringify({
    x402Version: 1,
    scheme: 'exact',
    network: offer.network,
    payload: {
      challengeId: offer.challengeId,
      transaction: signed.bytes,
      signature: signed.signature,
    },
  })
  return btoa(String.fromCharCode(...new TextEncoder().encode(json)))
}
