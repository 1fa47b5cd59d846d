/**
 * `createLedger()`: the ledger over `@mysten/sui`'s transport-agnostic core API
 * (`ClientWithCoreApi`). Mainnet, testnet and the local emulator are one code path: give it a gRPC
 * URL (a `SuiGrpcClient` is made) or a client.
 *
 * @module
 */
import type { ClientWithCoreApi, SuiClientTypes } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import { invariant } from '../internal/invariant.js'
import { messageOf } from '../internal/messageOf.js'
import { parseTransactionData, transactionDigest } from '../internal/transactionData.js'
import { normalizeTypeTag } from '../internal/typeTag.js'
import { judgeExecutability } from './executability.js'
import { buildMoveCall } from './moveCall.js'
import { buildTransfer } from './transfer.js'
import type { Ledger, LedgerBalance, LookupOutcome, Settlement } from './types.js'

/** Options of {@link createLedger}. */
export type LedgerOptions = (
  | {
      /** Full-node gRPC(-web) base URL, e.g. `https://fullnode.mainnet.sui.io:443` or the emulator's. */
      url: string
      /** Network name given to the SDK. Default `'mainnet'`. */
      network?: SuiClientTypes.Network
      /**
       * The `fetch` the gRPC-web calls use. Default `globalThis.fetch` (every runtime has one). On
       * Node, the Express and Koa adapters, the CLI, the buyer client and the reference gateway
       * pass the keep-alive Node transport (`nodeFetch`: undici's `request()` with a keep-alive
       * `Agent`, markedly cheaper per call than the global `fetch`); a Hono app on Node can pass it
       * too.
       */
      fetch?: typeof fetch | undefined
    }
  | { client: ClientWithCoreApi }
) & {
  /**
   * The operator's key for `transfer` (refunds, anchors). Security: holds the seller's funds; it is
   * only used to sign and is never logged.
   */
  operator?: Signer
  /** Per-call timeout in ms. Default 15 000. A timed-out execution is `unknown`, never `rejected`. */
  timeoutMs?: number
  /** Let `transfer` use the gasless address-balance form when possible. Default true. */
  allowGasless?: boolean
  /** The USDC coin type (the only one the gasless form moves). Default mainnet USDC. */
  usdcType?: string
}

const DEFAULT_USDC =
  '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const REJECTION_CODES = new Set([
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'OUT_OF_RANGE',
  'ALREADY_EXISTS',
])

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

function senderOf(bytes: Uint8Array | undefined): string {
  if (!bytes) return ''
  try {
    return normalizeSuiAddress(parseTransactionData(bytes).V1?.sender ?? '')
  } catch {
    return ''
  }
}

type Include = { balanceChanges: true; events: true; bcs?: true }
/** A look-up needs the transaction's bytes for its sender. */
const lookupInclude: Include = { balanceChanges: true, events: true, bcs: true }
/** An execution already has the bytes it submitted: the answer need not repeat them. */
const executeInclude: Include = { balanceChanges: true, events: true }

/**
 * Normalises an SDK transaction result into a {@link Settlement}.
 *
 * @param result - the SDK's answer, with balance changes and events.
 * @param txBytes - the transaction's bytes when the result does not carry them (`bcs`).
 */
export function toSettlement(
  result: SuiClientTypes.TransactionResult<Include>,
  txBytes?: Uint8Array,
): Settlement {
  const tx = result.Transaction ?? result.FailedTransaction
  invariant(tx, 'transaction result without a transaction')
  return {
    digest: tx.digest,
    success: tx.status.success,
    error: tx.status.success ? undefined : (tx.status.error?.message ?? 'transaction failed'),
    sender: senderOf(txBytes ?? tx.bcs),
    balanceChanges: tx.balanceChanges.map((c) => ({
      address: normalizeSuiAddress(c.address),
      coinType: normalizeTypeTag(c.coinType) ?? c.coinType,
      amount: BigInt(c.amount),
    })),
    events: tx.events.map((e) => ({
      packageId: e.packageId,
      module: e.module,
      sender: e.sender,
      eventType: e.eventType,
      json: e.json,
    })),
    checkpoint: tx.checkpoint,
    timestampMs: tx.timestampMs,
  }
}

/**
 * Creates the ledger.
 *
 * @param options - `url` (or `client`), `fetch` (default `globalThis.fetch`), `operator` key for
 *   transfers, `timeoutMs` (default 15 000), `allowGasless` (default true), `usdcType` (default
 *   mainnet USDC).
 * @example
 * const ledger = createLedger({ url: 'http://127.0.0.1:9123' })
 * const outcome = await ledger.execute(bytes, [signature])
 * if (outcome.status === 'unknown') await ledger.waitFor(outcome.digest)
 */
export function createLedger(options: LedgerOptions): Ledger {
  const client: ClientWithCoreApi =
    'client' in options
      ? options.client
      : new SuiGrpcClient({
          network: options.network ?? 'mainnet',
          baseUrl: options.url,
          // Binary frames: no base64 on either side. Full nodes and the emulator accept both.
          format: 'binary',
          // Looked up per call when not given, as `globalThis.fetch` may be replaced (mocks).
          ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
        })
  const timeoutMs = options.timeoutMs ?? 15_000
  const usdcType = normalizeStructTag(options.usdcType ?? DEFAULT_USDC)
  let chainId: Promise<string> | undefined

  const getTransaction = async (digest: string): Promise<LookupOutcome> => {
    try {
      const result = await client.core.getTransaction({
        digest,
        include: lookupInclude,
        signal: AbortSignal.timeout(timeoutMs),
      })
      return { status: 'found', transaction: toSettlement(result) }
    } catch (error) {
      const notFound =
        codeOf(error) === 'NOT_FOUND' ||
        (error as { reason?: unknown })?.reason === 'notFound' ||
        /not ?found/i.test(messageOf(error))
      return notFound ? { status: 'not_found' } : { status: 'unknown', reason: messageOf(error) }
    }
  }

  const ledger: Ledger = {
    async execute(txBytes, signatures) {
      let digest: string
      try {
        digest = transactionDigest(txBytes)
      } catch {
        return { status: 'rejected', reason: 'the transaction bytes do not parse' }
      }
      try {
        const result = await client.core.executeTransaction({
          transaction: txBytes,
          signatures: [...signatures],
          include: executeInclude,
          signal: AbortSignal.timeout(timeoutMs),
        })
        return { status: 'executed', transaction: toSettlement(result, txBytes) }
      } catch (error) {
        const code = codeOf(error)
        if (code && REJECTION_CODES.has(code))
          return { status: 'rejected', reason: messageOf(error) }
        // No answer: it may have executed. One look-up by digest settles the common case.
        const found = await getTransaction(digest)
        if (found.status === 'found') return { status: 'executed', transaction: found.transaction }
        return { status: 'unknown', reason: messageOf(error), digest }
      }
    },
    getTransaction,
    async waitFor(digest, waitOptions = {}) {
      const deadline = Date.now() + (waitOptions.timeoutMs ?? 10_000)
      let delay = 50
      let last: LookupOutcome = { status: 'not_found' }
      while (true) {
        last = await getTransaction(digest)
        if (last.status === 'found' || Date.now() + delay > deadline) return last
        await new Promise((resolve) => setTimeout(resolve, delay))
        delay = Math.min(delay * 2, 1_000)
      }
    },
    async getBalance(address, coinType): Promise<LedgerBalance> {
      const { balance } = await client.core.getBalance({
        owner: normalizeSuiAddress(address),
        coinType: normalizeStructTag(coinType),
        signal: AbortSignal.timeout(timeoutMs),
      })
      return {
        total: BigInt(balance.balance),
        coinBalance: BigInt(balance.coinBalance),
        addressBalance: BigInt(balance.addressBalance),
      }
    },
    buildTransfer: (request) =>
      buildTransfer(client, {
        ...request,
        usdcType,
        allowGasless: options.allowGasless ?? true,
        chainId: ledger.chainIdentifier(),
      }),
    canStillExecute: (txBytes) => judgeExecutability(client, txBytes, timeoutMs),
    buildMoveCall: (request) => buildMoveCall(client, request),
    async transfer(request) {
      const operator = options.operator
      if (!operator)
        throw new PaymentError('invalid_config', 'The ledger has no operator key for transfers.')
      const bytes = await ledger.buildTransfer({ ...request, sender: operator.toSuiAddress() })
      const { signature } = await operator.signTransaction(bytes)
      const outcome = await ledger.execute(bytes, [signature])
      return { ...outcome, digest: transactionDigest(bytes) }
    },
    chainIdentifier() {
      chainId ??= client.core.getChainIdentifier().then((r) => r.chainIdentifier)
      chainId.catch(() => {
        chainId = undefined
      })
      return chainId
    },
  }
  return ledger
}
