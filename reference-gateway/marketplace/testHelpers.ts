/**
 * Test-only: what the marketplace tests share — a listing submitted as a seller does it (prepare,
 * sign the message with a Sui personal-message signature, submit), or put straight into the store. The sellers they list are
 * started with `startSeller` (conformance/fixtures/sellers.ts), with an adapter or without.
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { MAINNET_USDC_TYPE } from 'tollgate/testing'
import type { Listing, MarketplaceStore } from './store.js'

/** An answer of the marketplace routes: its status and JSON body. */
export type RouteAnswer = { status: number; json: Record<string, unknown> }

/** POSTs `body` as JSON to `url`. */
export async function postJson(url: string, body: unknown): Promise<RouteAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/**
 * Lists `body.url` as `signer` through the routes at `agentBase` (`…/v1/agent`): prepares, signs
 * the message it returns (a Sui personal-message signature) and submits. Throws when prepare fails;
 * answers the submission.
 */
export async function submitListing(
  agentBase: string,
  signer: Ed25519Keypair,
  body: Record<string, unknown>,
): Promise<RouteAnswer> {
  const address = signer.toSuiAddress()
  const prepared = await postJson(`${agentBase}/endpoint/prepare`, {
    address,
    action: 'submit',
    body,
  })
  if (prepared.status !== 201) throw new Error(`prepare: ${JSON.stringify(prepared.json)}`)
  const { nonce, message } = prepared.json as { nonce: string; message: string }
  const { signature } = await signer.signPersonalMessage(new TextEncoder().encode(message))
  return postJson(`${agentBase}/endpoint/submit`, { address, nonce, signature, body })
}

/**
 * Puts a listing straight into `store`: `seller`'s endpoint at `url` (`POST`, 0.02 USDC on
 * mainnet, paid to the seller), tagged `tag`, its re-probe due at `dueAtMs`, written at `atMs`.
 */
export function putListingOf(
  store: MarketplaceStore,
  listing: { seller: string; url: string; name: string; tag: string },
  dueAtMs: number,
  atMs: number,
): Promise<Listing> {
  return store.putListing(
    {
      seller: listing.seller,
      url: listing.url,
      method: 'POST',
      probeBody: '{}',
      name: listing.name,
      description: '',
      tags: [listing.tag],
      network: 'sui:mainnet',
      asset: MAINNET_USDC_TYPE,
      price: 20_000n,
      payTo: listing.seller,
      nextProbeAtMs: dueAtMs,
    },
    new Date(atMs),
  )
}
