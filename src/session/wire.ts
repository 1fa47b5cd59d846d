/**
 * The wire of an MPP `session` with method `sui` (docs/protocol.md, "Sessions"): mppx's envelope,
 * actions and field names wherever Sui does not force a difference. The challenge is a `Payment`
 * challenge with `intent="session"`; its `request` is {@link SessionRequest}; the credential's
 * payload is one of the four actions (`open`, `topUp`, `voucher`, `close`); management actions are
 * answered 204 with a `Payment-Receipt` whose fields are {@link SessionReceipt}; refusals are
 * problem documents under `paymentauth.org/problems/session/`.
 *
 * Every schema bounds every string; amounts are decimal base units of at most 2^63 − 1.
 *
 * @module
 */
import { z } from 'zod'
import { isStrictBase64 } from '../internal/base64.js'
import { suiAddressSchema } from '../x402.js'

/** A decimal amount in base units, 0 to 2^63 − 1 (19 digits, checked by value). */
export const sessionAmountSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,18})$/)
  .refine((value) => BigInt(value) <= 2n ** 63n - 1n, { message: 'above 2^63 − 1' })

const hex = (bytes: number) => z.string().regex(new RegExp(`^0x[0-9a-f]{${bytes * 2}}$`))
const coinTypeSchema = z
  .string()
  .min(5)
  .max(256)
  .regex(/^0x[0-9a-fA-F]{1,64}::[A-Za-z0-9_]+::[A-Za-z0-9_]+$/)

/** The decoded `request` of a session challenge. */
export const sessionRequestSchema = z.object({
  /** Price per unit, base units, > 0. */
  amount: sessionAmountSchema.refine((v) => v !== '0', { message: 'zero' }),
  /** What a unit is: `request` (per call) or `token` (per streamed event). */
  unitType: z.enum(['request', 'token']),
  /** A deposit the seller suggests, base units. */
  suggestedDeposit: sessionAmountSchema.optional(),
  /** The coin type (the network's USDC). */
  currency: coinTypeSchema,
  /** The payee. */
  recipient: suiAddressSchema,
  methodDetails: z.object({
    /** `mainnet`, `testnet` or a local network's name. */
    network: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
    /** The package holding the channel module. */
    package: suiAddressSchema,
    /** The shared registry object channel ids are derived under. */
    registry: suiAddressSchema,
    /** The channel to resume, when the seller knows one of this buyer's. */
    channelId: suiAddressSchema.optional(),
    /** The smallest raise of a voucher the seller takes, base units. */
    minVoucherDelta: sessionAmountSchema.optional(),
    /** The grace period the seller requires of a channel, ms (≥ 900 000). */
    gracePeriodMs: z.number().int().min(900_000).max(2_592_000_000),
  }),
})

/** What a channel is opened with: everything its id and its checks depend on. */
export const channelDescriptorSchema = z.object({
  payer: suiAddressSchema,
  payee: suiAddressSchema,
  /** `0x0` for none. */
  operator: suiAddressSchema,
  coinType: coinTypeSchema,
  /** 32 bytes, hex. */
  salt: hex(32),
  /** The session key's Ed25519 public key, hex (32 bytes). */
  signerPublicKey: hex(32),
  gracePeriodMs: z.number().int().min(900_000).max(2_592_000_000),
})

/** A raw Ed25519 voucher signature: `0x` + 128 hex. */
const voucherSignatureSchema = hex(64)

/** A transaction the seller executes: base64 BCS `TransactionData` and its signatures. */
const transactionFields = {
  type: z.literal('transaction'),
  transaction: z.string().min(4).max(65_536).refine(isStrictBase64, { message: 'not base64' }),
  transactionSignatures: z
    .array(z.string().min(4).max(8_192).refine(isStrictBase64, { message: 'not base64' }))
    .min(1)
    .max(4),
}
/** A transaction the buyer executed itself: its digest. */
const digestFields = {
  type: z.literal('digest'),
  digest: z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
}

const channelFields = { channelId: suiAddressSchema, descriptor: channelDescriptorSchema }
const voucherFields = { cumulativeAmount: sessionAmountSchema, signature: voucherSignatureSchema }

/** The payload of a session credential, by action. */
export const sessionPayloadSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('voucher'), ...channelFields, ...voucherFields }),
  z.discriminatedUnion('type', [
    z.object({
      action: z.literal('open'),
      ...channelFields,
      ...voucherFields,
      ...transactionFields,
    }),
    z.object({ action: z.literal('open'), ...channelFields, ...voucherFields, ...digestFields }),
  ]),
  z.discriminatedUnion('type', [
    z.object({
      action: z.literal('topUp'),
      ...channelFields,
      additionalDeposit: sessionAmountSchema,
      ...transactionFields,
    }),
    z.object({
      action: z.literal('topUp'),
      ...channelFields,
      additionalDeposit: sessionAmountSchema,
      ...digestFields,
    }),
  ]),
  z.object({ action: z.literal('close'), ...channelFields, ...voucherFields }),
])

/** The fields of a session's `Payment-Receipt` (and of the SSE `payment-receipt` event). */
export const sessionReceiptSchema = z.object({
  method: z.literal('sui'),
  intent: z.literal('session'),
  status: z.literal('success'),
  timestamp: z.iso.datetime({ offset: true }),
  /** The channel id. */
  reference: suiAddressSchema,
  challengeId: z.string().min(1).max(256),
  channelId: suiAddressSchema,
  acceptedCumulative: sessionAmountSchema,
  spent: sessionAmountSchema,
  units: sessionAmountSchema.optional(),
  /** The digest of a transaction the action made (open, top-up, close). */
  txHash: z
    .string()
    .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/)
    .optional(),
})

/** The data of the SSE `payment-need-voucher` event. */
export const needVoucherSchema = z.object({
  channelId: suiAddressSchema,
  /** The voucher amount the stream waits for. */
  requiredCumulative: sessionAmountSchema,
  acceptedCumulative: sessionAmountSchema,
  deposit: sessionAmountSchema,
})

/** The problem types of sessions, with their HTTP status (mppx's names). */
export const sessionProblems = {
  'invalid-signature': 402,
  'signer-mismatch': 402,
  'amount-exceeds-deposit': 402,
  'delta-too-small': 402,
  'insufficient-balance': 402,
  'channel-not-found': 410,
  'channel-finalized': 410,
} as const

/** A session problem's name. */
export type SessionProblem = keyof typeof sessionProblems

/** The `type` URI of a session problem. */
export function sessionProblemType(problem: SessionProblem): string {
  return `https://paymentauth.org/problems/session/${problem}`
}
