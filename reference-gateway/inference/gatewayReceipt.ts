/**
 * The gateway's own receipt for each confidential answer: a compact JWS (EdDSA, Ed25519, made with
 * `jose`) that binds what was PAID (the key id, ledger entry and reservation of a keyed call; the
 * settlement digest and amount of a keyless one) to what was COMPUTED (the enclave's receipt id and
 * the sha256 of its JCS form, the request and response hashes, the attested session it relied on).
 * Its keys are published as a JWKS at `/.well-known/tollgate-receipt-keys.json`, and its hash
 * (the sha256 of the compact JWS) is part of the receipt's ledger
 * anchor (`anchors.ts`), which `verifyInferenceReceipt` checks.
 *
 * The signing key lives in the relational store (`aci_signing_keys`), created once — several
 * gateway processes on one database share it, and a restart keeps it, so every stored receipt stays
 * verifiable. Security: whoever reads that table can sign receipts in the gateway's name.
 *
 * @module
 */
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose'
import type { Kysely } from 'kysely'
import { Attestation } from 'tollgate'
import type { GatewaySchema } from '../db/schema.js'
import type { VerifiedReceipt } from './confidential.js'

/** What paid for a confidential answer. */
export type PaymentBinding =
  | { kind: 'credit'; keyId: string; entryId: string; amount: bigint }
  | { kind: 'payment'; digest: string; amount: bigint }

/** The claims of a gateway receipt (the JWS payload). */
export type GatewayReceiptClaims = {
  iss: string
  sub: string
  iat: number
  model: string
  enclave_receipt: { id: string; hash: string }
  request_hash: string
  response_hash: string
  attestation: {
    session_id: string
    nonce: string
    workload_id: string
    keyset_digest: string
    measurement: string
  }
  payment:
    | { kind: 'credit'; key_id: string; entry_id: string; amount: string }
    | { kind: 'payment'; digest: string; amount: string }
    | { kind: 'none' }
}

/** The JWS `typ` of a gateway receipt. */
export const gatewayReceiptType = 'tollgate-receipt+jwt'
/** Where the JWKS is published. */
export const receiptKeysPath = '/.well-known/tollgate-receipt-keys.json'

/** Signs gateway receipts and publishes their keys. */
export type GatewayReceiptSigner = {
  sign(receipt: VerifiedReceipt): Promise<string>
  jwks(): Promise<{ keys: JWK[] }>
}

/**
 * The signer over the gateway's relational store; the key is created at first use.
 *
 * @param options.issuer - the `iss` claim: the gateway's public base URL.
 * @example
 * ```ts
 * const signer = createGatewayReceiptSigner(database.db, { issuer: 'https://gw.example' })
 * const jws = await signer.sign(receipt)
 * ```
 */
export function createGatewayReceiptSigner(
  db: Kysely<GatewaySchema>,
  options: { issuer: string },
): GatewayReceiptSigner {
  let loaded: Promise<{ kid: string; privateKey: CryptoKey; publicJwk: JWK }> | undefined

  async function load() {
    let row = await db.selectFrom('aci_signing_keys').selectAll().orderBy('kid').executeTakeFirst()
    if (row === undefined) {
      const { privateKey, publicKey } = await generateKeyPair('EdDSA', {
        crv: 'Ed25519',
        extractable: true,
      })
      const publicJwk = await exportJWK(publicKey)
      const kid = `grk-${Attestation.sha256Tag(Attestation.jcsBytes(publicJwk)).slice(7, 23)}`
      await db
        .insertInto('aci_signing_keys')
        .values({
          kid,
          public_jwk: JSON.stringify(publicJwk),
          private_jwk: JSON.stringify(await exportJWK(privateKey)),
          created_at: new Date().toISOString(),
        })
        .onConflict((oc) => oc.column('kid').doNothing())
        .execute()
      // Two processes starting at once may each write a key: both then sign with the same one (the
      // lowest kid), and the JWKS publishes both.
      row = await db.selectFrom('aci_signing_keys').selectAll().orderBy('kid').executeTakeFirst()
      if (row === undefined) throw new Error('no receipt signing key')
    }
    const privateKey = (await importJWK(JSON.parse(row.private_jwk), 'EdDSA')) as CryptoKey
    return { kid: row.kid, privateKey, publicJwk: JSON.parse(row.public_jwk) as JWK }
  }
  const key = () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined
      throw error
    })
    return loaded
  }

  return {
    async sign(receipt) {
      const { kid, privateKey } = await key()
      const claims: Omit<GatewayReceiptClaims, 'iat'> = {
        iss: options.issuer,
        sub: receipt.id,
        model: receipt.model,
        enclave_receipt: {
          id: receipt.id,
          hash: Attestation.sha256Tag(Attestation.jcsBytes(JSON.parse(receipt.receiptJson))),
        },
        request_hash: receipt.requestHash,
        response_hash: receipt.responseHash,
        attestation: {
          session_id: receipt.session.id,
          nonce: receipt.session.nonce,
          workload_id: receipt.session.workloadId,
          keyset_digest: receipt.session.keysetDigest,
          measurement: receipt.session.measurement,
        },
        payment: paymentClaim(receipt.payment),
      }
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: gatewayReceiptType })
        .setIssuedAt()
        .sign(privateKey)
    },
    async jwks() {
      const rows = await db.selectFrom('aci_signing_keys').select(['kid', 'public_jwk']).execute()
      return {
        keys: rows.map((r) => ({
          ...(JSON.parse(r.public_jwk) as JWK),
          kid: r.kid,
          alg: 'EdDSA',
          use: 'sig',
        })),
      }
    },
  }
}

function paymentClaim(payment: PaymentBinding | undefined): GatewayReceiptClaims['payment'] {
  if (payment === undefined) return { kind: 'none' }
  return payment.kind === 'credit'
    ? {
        kind: 'credit',
        key_id: payment.keyId,
        entry_id: payment.entryId,
        amount: payment.amount.toString(),
      }
    : { kind: 'payment', digest: payment.digest, amount: payment.amount.toString() }
}
