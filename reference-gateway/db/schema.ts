/**
 * The tables of the gateway's relational store, as Kysely sees them. One definition serves SQLite and
 * PostgreSQL: amounts are 64-bit integers (`INTEGER` / `BIGINT`) read back as bigints, times are ISO
 * 8601 text.
 *
 * @module
 */
import type { ColumnType } from 'kysely'

/** An integer column: written as a bigint, read as whatever the driver gives (`bigint`, `number`, `string`). */
export type BigintColumn = ColumnType<bigint | number | string, bigint, bigint>

/** A nullable integer column, read as whatever the driver gives. */
export type NullableBigintColumn = ColumnType<
  bigint | number | string | null,
  bigint | null | undefined,
  bigint | null
>

/** `inference_keys`: one API key of the private inference API, stored by its SHA-256 hash. */
export type InferenceKeyTable = {
  /** Public id (`key_…`), safe to show and log. */
  id: string
  /** Hex SHA-256 of the secret key; the secret itself is never stored. */
  hash: string
  /** The key's last 4 characters, to recognise it in a list. */
  hint: string
  /** Operator's label. */
  name: string | null
  /** Credit in USDC base units. */
  credit: BigintColumn
  created_at: string
  revoked_at: string | null
  /** The Sui address (normalised) that owns the key in the console; null for operator keys. */
  owner: ColumnType<string | null, string | null | undefined, string | null>
}

/** Kinds of ledger entries. */
export type LedgerKind = 'call' | 'top_up'

/**
 * States of a ledger entry: a call is `debited` (its reservation held), then `served` (settled at
 * its actual tokens) or `restored` (the reservation given back), exactly once; a top-up is
 * `credited`.
 */
export type LedgerState = 'debited' | 'served' | 'restored' | 'credited'

/** `inference_ledger`: every movement of a key's credit. */
export type InferenceLedgerTable = {
  /** The request id of a call, or `top_<…>` of a top-up. */
  id: string
  key_id: string
  kind: LedgerKind
  state: LedgerState
  /**
   * Base units taken from the credit (a call: its reservation while `debited`, its cost once
   * `served`) or credited (top-up).
   */
  amount: BigintColumn
  /** A call's reservation, base units: the most it could cost. Null for top-ups and older calls. */
  reserved: NullableBigintColumn
  /**
   * Until when (ms) a `debited` call's reservation belongs to the process serving it; after it, the
   * reservation sweeper gives it back. Null for top-ups and older calls.
   */
  lease_until_ms: NullableBigintColumn
  model: string | null
  /** What paid a top-up (`operator`, or the payment digest); unique, so a payment credits once. */
  reference: string | null
  prompt_tokens: number | null
  completion_tokens: number | null
  created_at: string
  updated_at: string
}

/** States of a seller listing (docs/marketplace.md, "Re-probes"), plus `delisted` when its seller withdrew it. */
export type ListingState = 'listed' | 'suspended' | 'delisted'

/** `marketplace_listings`: one seller endpoint in the catalog (one per seller, method and URL). */
export type ListingTable = {
  /** Public id (`lst_…`). */
  id: string
  /** The seller's agent address (normalised). */
  seller: string
  url: string
  method: string
  /** The request body the probes send (JSON text). */
  probe_body: string
  name: string
  description: string
  /** JSON array of tags. */
  tags: string
  /** From the seller's challenge at the last passing probe. */
  network: string
  asset: string
  /** Price per call in USDC base units. */
  price: BigintColumn
  pay_to: string
  state: ListingState
  /** Failed re-probes in a row since the last pass. */
  consecutive_failures: number
  /** When the next re-probe is due, ms since the epoch. */
  next_probe_at_ms: BigintColumn
  created_at: string
  updated_at: string
  /** JSON Schema of the request body, as JSON text; null when the seller gave none. */
  input_schema: ColumnType<string | null, string | null | undefined, string | null>
  /** The listing's distinct search words, space-separated (`searchWords.ts`); indexed. */
  search_text: ColumnType<string, string | undefined, string>
}

/** `marketplace_probes`: every probe of a listing and its outcome. */
export type ProbeTable = {
  id: string
  listing_id: string
  /** `submission` or `reprobe`. */
  kind: 'submission' | 'reprobe'
  /** 1 when every gate passed. */
  passed: number
  /** The first gate that failed (`a`–`d`), or `error` when it could not be judged. */
  failed_gate: string | null
  message: string
  probed_at: string
}

/** `marketplace_nonces`: the single-use nonces of signed catalog mutations. */
export type NonceTable = {
  nonce: string
  /** The address that must sign (normalised). */
  address: string
  /** The mutation the nonce is for. */
  action: string
  /** Hex SHA-256 of the canonical body the nonce was issued for. */
  body_hash: string
  expires_at_ms: BigintColumn
  /** Set once, when a signed mutation consumed it. */
  used_at_ms: ColumnType<bigint | number | string | null, bigint | null, bigint | null>
}

/** `marketplace_leases`: who runs a periodic task until when (one holder across processes). */
export type LeaseTable = {
  name: string
  holder: string
  expires_at_ms: BigintColumn
}

/** `aci_sessions`: an attestation of a confidential model's enclave that the gateway verified. */
export type AciSessionTable = {
  /** `aci_` + the nonce. */
  id: string
  /** The public model id. */
  model: string
  /** The fresh nonce (hex) the report is bound to. */
  nonce: string
  workload_id: string
  keyset_digest: string
  measurement: string
  tcb_status: string
  attested_at_ms: BigintColumn
  stale_at_ms: BigintColumn
  /** The report as received (JSON text). */
  report: string
  /** What it was verified against: TEE type, quote verifier, measurements (JSON text). */
  policy: string
}

/** `aci_receipts`: a confidential answer's receipt, verified, kept after the enclave forgets it. */
export type AciReceiptTable = {
  /** The enclave's receipt id (the `x-receipt-id` header). */
  id: string
  model: string
  /** The session whose keys verified it. */
  session_id: string
  key_id: string
  /** The receipt exactly as the enclave sent it (JSON text). */
  receipt: string
  /** `sha256:` of the request bytes sent and the response bytes relayed. */
  request_hash: string
  response_hash: string
  /** The gateway's own receipt (compact JWS) binding the payment to this receipt. */
  gateway_receipt: string | null
  stored_at: string
  /** The ledger entry (`call_…`) of the keyed call this answered; null for a keyless answer. */
  call_id: ColumnType<string | null, string | null | undefined, string | null>
}

/** `aci_signing_keys`: the gateway's receipt signing key (Ed25519 JWKs). Secret: `private_jwk`. */
export type AciSigningKeyTable = {
  kid: string
  public_jwk: string
  private_jwk: string
  created_at: string
}

/** `aci_anchors`: the outbox of receipt anchors on the ledger (see `inference/anchors.ts`). */
export type AciAnchorTable = {
  receipt_id: string
  state: 'pending' | 'signed' | 'anchored'
  wire_hash: string
  workload_id: string
  served_at_ms: BigintColumn
  /** `sha256:` of the gateway's receipt (its compact JWS); `''` when it signed none. */
  gateway_receipt_hash: ColumnType<string, string | undefined, string>
  /** The signed call (base64 BCS), its signature and digest: the only anchor that may exist. */
  tx_bytes: string | null
  signature: string | null
  digest: string | null
  attempts: ColumnType<number | bigint, number, number>
  next_attempt_at_ms: BigintColumn
  /** Which process holds the row until when (ms). */
  lease_holder: string | null
  lease_until_ms: BigintColumn
  anchored_at: string | null
}

/** `marketplace_reviews`: a buyer's review of one purchase (a paid call) from a seller. */
export type MarketplaceReviewTable = {
  /** Public id (`rev_…`). */
  id: string
  /** The seller's address (normalised). */
  seller: string
  /** The buyer's address (normalised), who signed the review. */
  buyer: string
  /** The purchase reviewed: the payment's transaction digest. Unique. */
  purchase: string
  /** 1 to 5 stars. */
  rating: number
  text: string
  created_at: string
  /**
   * What the purchase paid, base units: a review counts in the rating from a minimum value, and
   * weighs by it. 0 for reviews written before it was recorded (they do not count).
   */
  value: ColumnType<bigint | number | string, bigint | undefined, bigint>
}

/** `marketplace_activity`: the activity feed, one row per payment digest. */
export type ActivityTable = {
  id: string
  /** `gateway` (settled through the gateway) or `report` (reported, found on the ledger). */
  source: 'gateway' | 'report'
  digest: string
  seller: string
  buyer: string
  amount: BigintColumn
  asset: string
  resource: string | null
  /** When it was paid, ms since the epoch. */
  at_ms: BigintColumn
  /** When the feed recorded it, ms since the epoch (orders the live stream). */
  recorded_ms: BigintColumn
}

/** `console_nonces`: the single-use nonces of console sign-ins. */
export type ConsoleNonceTable = {
  nonce: string
  /** The address that must sign (normalised). */
  address: string
  issued_at_ms: BigintColumn
  expires_at_ms: BigintColumn
  /** Set once, when a sign-in consumed it. */
  used_at_ms: ColumnType<bigint | number | string | null, bigint | null, bigint | null>
}

/** `console_sign_ins`: a signed-in owner of the console, found by its cookie token's SHA-256. */
export type ConsoleSignInTable = {
  /** Hex SHA-256 of the cookie's token; the token itself is never stored. */
  token_hash: string
  /** The owner's Sui address (normalised). */
  address: string
  created_at_ms: BigintColumn
  expires_at_ms: BigintColumn
}

/** The whole relational schema. */
export type GatewaySchema = {
  inference_keys: InferenceKeyTable
  inference_ledger: InferenceLedgerTable
  marketplace_listings: ListingTable
  marketplace_probes: ProbeTable
  marketplace_nonces: NonceTable
  marketplace_leases: LeaseTable
  aci_sessions: AciSessionTable
  aci_receipts: AciReceiptTable
  aci_signing_keys: AciSigningKeyTable
  aci_anchors: AciAnchorTable
  marketplace_reviews: MarketplaceReviewTable
  marketplace_activity: ActivityTable
  console_nonces: ConsoleNonceTable
  console_sign_ins: ConsoleSignInTable
}
