/**
 * The declared interface of the project's Move package (`move/tollgate`), as data: every public
 * function (name, type parameters, parameters by name and Move type, in order), every struct
 * (objects and events, fields in order) and every abort code by name. The emulator's native
 * handlers bind their arguments through this table, and `scripts/moveParity.test.ts` checks the
 * Move sources against it, so the emulator and the package cannot drift apart unnoticed.
 *
 * Types are written as in the Move source (`&mut EscrowJob`, `Coin<USDC>`, `vector<u8>`).
 * Parameters of type `&TxContext` / `&mut TxContext` are supplied by the runtime, not by the
 * transaction.
 *
 * This module holds data only (no import): the core's `escrowAborts` is built from it; the
 * handlers bind arguments and encode events with it through `bind.ts`.
 *
 * @module
 */
/** A named, typed slot: a function parameter or a struct field. */
export type MoveField = { readonly name: string; readonly type: string }

/** A public function of one of the package's modules. */
export type MoveFunctionSignature = {
  readonly module: string
  readonly name: string
  readonly typeParameters: readonly string[]
  /** In declaration order, including the trailing `TxContext` when the function takes one. */
  readonly parameters: readonly MoveField[]
}

/**
 * A struct of one of the package's modules: an object (`key`), an event (`copy, drop`, emitted) or
 * a value (`copy, drop`: a key or a signed message, never emitted).
 */
export type MoveStructSignature = {
  readonly module: string
  readonly name: string
  readonly kind: 'object' | 'event' | 'value'
  readonly abilities: readonly string[]
  readonly fields: readonly MoveField[]
}

/** An abort code of one of the package's modules, with its `E*` constant's name. */
export type MoveAbortCode = {
  readonly module: string
  readonly name: string
  readonly code: bigint
  /** When it happens. */
  readonly when: string
}

const p = (name: string, type: string): MoveField => ({ name, type })
const CLOCK = p('clock', '&Clock')
const CHANNEL = p('channel', '&mut Channel<T>')

/** Every public function of the package, by module. */
export const moduleFunctions: readonly MoveFunctionSignature[] = [
  {
    module: 'agent_registry',
    name: 'register',
    typeParameters: [],
    parameters: [
      p('name', 'String'),
      p('metadata_uri', 'String'),
      CLOCK,
      p('ctx', '&mut TxContext'),
    ],
  },
  {
    module: 'receipt_anchor',
    name: 'anchor_receipt',
    typeParameters: [],
    parameters: [
      p('receipt_id', 'String'),
      p('wire_hash', 'String'),
      p('workload_id', 'String'),
      p('served_at_ms', 'u64'),
      p('gateway_receipt_hash', 'String'),
      CLOCK,
      p('ctx', '&TxContext'),
    ],
  },
  {
    module: 'escrow',
    name: 'fund',
    typeParameters: [],
    parameters: [
      p('config', '&EscrowConfig'),
      p('payment', 'Coin<USDC>'),
      p('seller', 'address'),
      p('expected_budget', 'u64'),
      p('expected_fee_bps', 'u64'),
      p('deliver_by_ms', 'u64'),
      p('review_ms', 'u64'),
      p('terms', 'vector<u8>'),
      CLOCK,
      p('ctx', '&mut TxContext'),
    ],
  },
  {
    module: 'escrow',
    name: 'deliver',
    typeParameters: [],
    parameters: [
      p('job', '&mut EscrowJob'),
      p('delivery_hash', 'vector<u8>'),
      CLOCK,
      p('ctx', '&TxContext'),
    ],
  },
  {
    module: 'escrow',
    name: 'release',
    typeParameters: [],
    parameters: [p('job', '&mut EscrowJob'), CLOCK, p('ctx', '&TxContext')],
  },
  {
    module: 'escrow',
    name: 'reject',
    typeParameters: [],
    parameters: [p('job', '&mut EscrowJob'), p('reason', 'String'), CLOCK, p('ctx', '&TxContext')],
  },
  {
    module: 'escrow',
    name: 'refund',
    typeParameters: [],
    parameters: [p('job', '&mut EscrowJob'), CLOCK, p('ctx', '&TxContext')],
  },
  {
    module: 'escrow',
    name: 'set_fee',
    typeParameters: [],
    parameters: [p('cap', '&AdminCap'), p('config', '&mut EscrowConfig'), p('fee_bps', 'u64')],
  },
  {
    module: 'channel',
    name: 'open',
    typeParameters: ['T'],
    parameters: [
      p('registry', '&mut Registry'),
      p('payee', 'address'),
      p('operator', 'address'),
      p('salt', 'vector<u8>'),
      p('signer', 'vector<u8>'),
      p('grace_ms', 'u64'),
      p('funds', 'Balance<T>'),
      p('ctx', '&mut TxContext'),
    ],
  },
  {
    module: 'channel',
    name: 'top_up',
    typeParameters: ['T'],
    parameters: [CHANNEL, p('funds', 'Balance<T>'), p('ctx', '&TxContext')],
  },
  {
    module: 'channel',
    name: 'settle',
    typeParameters: ['T'],
    parameters: [
      CHANNEL,
      p('cumulative_amount', 'u64'),
      p('capture', 'u64'),
      p('signature', 'vector<u8>'),
      p('ctx', '&TxContext'),
    ],
  },
  {
    module: 'channel',
    name: 'close',
    typeParameters: ['T'],
    parameters: [
      CHANNEL,
      p('cumulative_amount', 'u64'),
      p('capture', 'u64'),
      p('signature', 'vector<u8>'),
      p('ctx', '&TxContext'),
    ],
  },
  {
    module: 'channel',
    name: 'request_close',
    typeParameters: ['T'],
    parameters: [CHANNEL, CLOCK, p('ctx', '&TxContext')],
  },
  {
    module: 'channel',
    name: 'withdraw',
    typeParameters: ['T'],
    parameters: [CHANNEL, CLOCK, p('ctx', '&TxContext')],
  },
]

const EVENT = ['copy', 'drop'] as const
const jobEvent = (name: string): MoveStructSignature => ({
  module: 'escrow',
  name,
  kind: 'event',
  abilities: EVENT,
  fields: [p('job_id', 'ID'), p('by', 'address'), p('at_ms', 'u64')],
})
const jobPaid = (name: string): MoveStructSignature => ({
  module: 'escrow',
  name,
  kind: 'event',
  abilities: EVENT,
  fields: [p('job_id', 'ID'), p('to', 'address'), p('amount', 'u64'), p('fee', 'u64')],
})

/** Every struct of the package (objects and events), by module. */
export const moduleStructs: readonly MoveStructSignature[] = [
  {
    module: 'agent_registry',
    name: 'AgentRecord',
    kind: 'object',
    abilities: ['key'],
    fields: [
      p('id', 'UID'),
      p('agent', 'address'),
      p('name', 'String'),
      p('metadata_uri', 'String'),
      p('registered_at_ms', 'u64'),
    ],
  },
  {
    module: 'agent_registry',
    name: 'AgentRegistered',
    kind: 'event',
    abilities: EVENT,
    fields: [
      p('agent', 'address'),
      p('name', 'String'),
      p('metadata_uri', 'String'),
      p('registered_at_ms', 'u64'),
    ],
  },
  {
    module: 'receipt_anchor',
    name: 'ReceiptAnchored',
    kind: 'event',
    abilities: EVENT,
    fields: [
      p('receipt_id', 'String'),
      p('wire_hash', 'String'),
      p('workload_id', 'String'),
      p('served_at_ms', 'u64'),
      p('gateway_receipt_hash', 'String'),
      p('anchored_at_ms', 'u64'),
      p('anchored_by', 'address'),
    ],
  },
  {
    module: 'escrow',
    name: 'EscrowConfig',
    kind: 'object',
    abilities: ['key'],
    fields: [p('id', 'UID'), p('fee_bps', 'u64'), p('treasury', 'address')],
  },
  {
    module: 'escrow',
    name: 'AdminCap',
    kind: 'object',
    abilities: ['key'],
    fields: [p('id', 'UID'), p('config', 'ID')],
  },
  {
    module: 'escrow',
    name: 'EscrowJob',
    kind: 'object',
    abilities: ['key'],
    fields: [
      p('id', 'UID'),
      p('config', 'ID'),
      p('buyer', 'address'),
      p('seller', 'address'),
      p('amount', 'u64'),
      p('balance', 'Balance<USDC>'),
      p('fee_bps', 'u64'),
      p('treasury', 'address'),
      p('funded_at_ms', 'u64'),
      p('deliver_by_ms', 'u64'),
      p('review_ms', 'u64'),
      p('terms', 'vector<u8>'),
      p('state', 'String'),
      p('delivery_hash', 'vector<u8>'),
      p('delivered_at_ms', 'u64'),
      p('deliveries', 'u64'),
      p('rejections', 'u64'),
      p('reject_reason', 'String'),
      p('paid_to_seller', 'u64'),
      p('paid_fee', 'u64'),
      p('refunded', 'u64'),
    ],
  },
  {
    module: 'escrow',
    name: 'JobFunded',
    kind: 'event',
    abilities: EVENT,
    fields: [
      p('job_id', 'ID'),
      p('buyer', 'address'),
      p('seller', 'address'),
      p('amount', 'u64'),
      p('fee_bps', 'u64'),
      p('deliver_by_ms', 'u64'),
    ],
  },
  jobEvent('JobDelivered'),
  jobEvent('JobRejected'),
  jobPaid('JobReleased'),
  jobPaid('JobRefunded'),
  {
    module: 'escrow',
    name: 'FeeChanged',
    kind: 'event',
    abilities: EVENT,
    fields: [p('old_bps', 'u64'), p('new_bps', 'u64')],
  },
  {
    module: 'channel',
    name: 'Registry',
    kind: 'object',
    abilities: ['key'],
    fields: [p('id', 'UID')],
  },
  {
    module: 'channel',
    name: 'ChannelKey',
    kind: 'value',
    abilities: ['copy', 'drop', 'store'],
    fields: [p('payer', 'address'), p('payee', 'address'), p('salt', 'vector<u8>')],
  },
  {
    module: 'channel',
    name: 'Channel',
    kind: 'object',
    abilities: ['key'],
    fields: [
      p('id', 'UID'),
      p('payer', 'address'),
      p('payee', 'address'),
      p('operator', 'address'),
      p('signer', 'vector<u8>'),
      p('escrow', 'Balance<T>'),
      p('deposited', 'u64'),
      p('settled', 'u64'),
      p('close_requested_ms', 'u64'),
      p('grace_ms', 'u64'),
      p('closed', 'bool'),
    ],
  },
  {
    module: 'channel',
    name: 'VoucherMsg',
    kind: 'value',
    abilities: EVENT,
    fields: [p('domain', 'vector<u8>'), p('channel_id', 'ID'), p('cumulative_amount', 'u64')],
  },
  {
    module: 'channel',
    name: 'ChannelOpened',
    kind: 'event',
    abilities: EVENT,
    fields: [
      p('channel_id', 'ID'),
      p('payer', 'address'),
      p('payee', 'address'),
      p('operator', 'address'),
      p('coin_type', 'String'),
      p('deposit', 'u64'),
      p('grace_ms', 'u64'),
    ],
  },
  {
    module: 'channel',
    name: 'ToppedUp',
    kind: 'event',
    abilities: EVENT,
    fields: [p('channel_id', 'ID'), p('amount', 'u64'), p('deposited', 'u64')],
  },
  {
    module: 'channel',
    name: 'Settled',
    kind: 'event',
    abilities: EVENT,
    fields: [
      p('channel_id', 'ID'),
      p('cumulative_amount', 'u64'),
      p('amount', 'u64'),
      p('settled', 'u64'),
    ],
  },
  {
    module: 'channel',
    name: 'CloseRequested',
    kind: 'event',
    abilities: EVENT,
    fields: [p('channel_id', 'ID'), p('requested_at_ms', 'u64'), p('grace_end_ms', 'u64')],
  },
  {
    module: 'channel',
    name: 'CloseRequestCancelled',
    kind: 'event',
    abilities: EVENT,
    fields: [p('channel_id', 'ID')],
  },
  {
    module: 'channel',
    name: 'ChannelClosed',
    kind: 'event',
    abilities: EVENT,
    fields: [p('channel_id', 'ID'), p('settled', 'u64'), p('paid', 'u64'), p('refunded', 'u64')],
  },
  {
    module: 'channel',
    name: 'Withdrawn',
    kind: 'event',
    abilities: EVENT,
    fields: [p('channel_id', 'ID'), p('refunded', 'u64')],
  },
]

/** The escrow module's abort codes, keyed by the emulator's name for them. */
export const escrowAbortCodes = {
  notBuyer: { name: 'ENOT_BUYER', code: 1n, when: 'reject by anyone but the buyer' },
  notSeller: { name: 'ENOT_SELLER', code: 2n, when: 'deliver by anyone but the seller' },
  wrongState: {
    name: 'EWRONG_STATE',
    code: 3n,
    when: "the move is not allowed in the job's state",
  },
  deliveryClosed: {
    name: 'EDELIVERY_CLOSED',
    code: 4n,
    when: 'deliver at or after the delivery deadline',
  },
  deadlineNotReached: {
    name: 'EDEADLINE_NOT_REACHED',
    code: 5n,
    when: "the buyer's refund before the delivery deadline",
  },
  reviewClosed: { name: 'EREVIEW_CLOSED', code: 6n, when: 'reject after the review window' },
  reviewOpen: {
    name: 'EREVIEW_OPEN',
    code: 7n,
    when: "the seller's release while the review window is open",
  },
  budgetMismatch: {
    name: 'EBUDGET_MISMATCH',
    code: 8n,
    when: 'fund with a coin that is not the expected budget',
  },
  feeChanged: {
    name: 'EFEE_CHANGED',
    code: 9n,
    when: 'fund when the fee rate is no longer the expected one',
  },
  zeroAmount: { name: 'EZERO_AMOUNT', code: 10n, when: 'fund with an empty coin' },
  badDeadline: {
    name: 'EBAD_DEADLINE',
    code: 11n,
    when: 'fund with a deadline or review window out of range',
  },
  badHash: {
    name: 'EBAD_HASH',
    code: 12n,
    when: 'terms or a delivery hash that is not 32 bytes',
  },
  tooLong: { name: 'ETOO_LONG', code: 13n, when: 'a rejection reason over 1024 bytes' },
  badFee: { name: 'EBAD_FEE', code: 14n, when: 'set_fee over 10 000 bps' },
  notAdmin: {
    name: 'ENOT_ADMIN',
    code: 15n,
    when: 'set_fee with an AdminCap of another configuration',
  },
  notParty: {
    name: 'ENOT_PARTY',
    code: 16n,
    when: 'release or refund by someone who is neither buyer nor seller',
  },
  readOnly: {
    name: 'EREAD_ONLY',
    code: 17n,
    when: 'a job passed by immutable reference to a move that changes it',
  },
} as const satisfies Record<string, { name: string; code: bigint; when: string }>

/** The channel module's abort codes, keyed by the emulator's name for them. */
export const channelAbortCodes = {
  notPayer: {
    name: 'ENOT_PAYER',
    code: 1n,
    when: 'top_up, request_close or withdraw by anyone but the payer',
  },
  notPayee: {
    name: 'ENOT_PAYEE',
    code: 2n,
    when: 'settle or close by anyone but the payee (or its operator)',
  },
  closed: { name: 'ECLOSED', code: 3n, when: 'any move on a closed channel' },
  badPayee: { name: 'EBAD_PAYEE', code: 4n, when: 'open with the payee @0x0' },
  badSalt: { name: 'EBAD_SALT', code: 5n, when: 'open with a salt that is not 32 bytes' },
  badSigner: {
    name: 'EBAD_SIGNER',
    code: 6n,
    when: 'open with a signer key that is not 32 bytes',
  },
  graceTooShort: {
    name: 'EGRACE_TOO_SHORT',
    code: 7n,
    when: 'open with a grace period under 15 minutes',
  },
  zeroAmount: { name: 'EZERO_AMOUNT', code: 8n, when: 'open or top_up with no funds' },
  badAmount: {
    name: 'EBAD_AMOUNT',
    code: 9n,
    when: 'settle or close with a capture out of range (above the voucher or the deposit, or below what is settled)',
  },
  badSignature: {
    name: 'EBAD_SIGNATURE',
    code: 10n,
    when: "a voucher signature that is not the channel signer's over this channel and amount",
  },
  noCloseRequest: {
    name: 'ENO_CLOSE_REQUEST',
    code: 11n,
    when: 'withdraw without a pending close request',
  },
  graceNotOver: {
    name: 'EGRACE_NOT_OVER',
    code: 12n,
    when: 'withdraw before the grace period has passed',
  },
  alreadyOpened: {
    name: 'EALREADY_OPENED',
    code: 13n,
    when: 'open with the key of a channel that exists (open or closed)',
  },
  readOnly: {
    name: 'EREAD_ONLY',
    code: 14n,
    when: 'a channel or the registry passed by immutable reference',
  },
} as const satisfies Record<string, { name: string; code: bigint; when: string }>

/** The abort code of a string argument over 1024 bytes in `agent_registry` and `receipt_anchor`. */
export const ETOO_LONG_FIELD = 1n

/** Every abort code of the package, by module. */
export const moduleAborts: readonly MoveAbortCode[] = [
  {
    module: 'agent_registry',
    name: 'ETOO_LONG',
    code: ETOO_LONG_FIELD,
    when: 'a string argument over 1024 bytes',
  },
  {
    module: 'receipt_anchor',
    name: 'ETOO_LONG',
    code: ETOO_LONG_FIELD,
    when: 'a string argument over 1024 bytes',
  },
  ...Object.values(escrowAbortCodes).map((a) => ({ module: 'escrow', ...a })),
  ...Object.values(channelAbortCodes).map((a) => ({ module: 'channel', ...a })),
]

/** The declared signature of `module::name`; throws when the table has none (a programming error). */
export function signatureOf(module: string, name: string): MoveFunctionSignature {
  const found = moduleFunctions.find((f) => f.module === module && f.name === name)
  if (!found) throw new Error(`no declared signature for ${module}::${name}`)
  return found
}

/** The declared struct `module::name`; throws when the table has none. */
export function structOf(module: string, name: string): MoveStructSignature {
  const found = moduleStructs.find((s) => s.module === module && s.name === name)
  if (!found) throw new Error(`no declared struct ${module}::${name}`)
  return found
}

const isContext = (type: string) => /^&(mut )?TxContext$/.test(type)

/** The parameters a transaction passes (all but the runtime's `TxContext`). */
export function passedParameters(signature: MoveFunctionSignature): readonly MoveField[] {
  return signature.parameters.filter((param) => !isContext(param.type))
}
