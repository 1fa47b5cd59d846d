/**
 * The faucet: mints test USDC and SUI (never real) to an address, as coin objects or into the
 * address balance. Served at `POST {ledgerUrl}/faucet` and callable as a function.
 *
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import type { LedgerEngine } from './engine.js'
import { SUI_TYPE } from './state.js'

const decimal = z
  .string()
  .max(40)
  .regex(/^\d+(\.\d+)?$/, 'a non-negative decimal string')

/** Body of `POST /faucet`. Amounts are decimal strings in whole units ("10" USDC, "1" SUI). */
export const FaucetRequestSchema = z.strictObject({
  address: z
    .string()
    .max(80)
    .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'a Sui address'),
  usdc: decimal.optional(),
  sui: decimal.optional(),
  into: z.enum(['coin', 'addressBalance']).optional(),
})

/** A faucet request (see {@link FaucetRequestSchema}). */
export type FaucetRequest = z.infer<typeof FaucetRequestSchema> & {
  /** Mint this other coin type too (tests only, e.g. wUSDC), amount in base units. */
  extra?: { coinType: string; amount: bigint }
}

/** What the faucet minted. */
export type FaucetResult = {
  address: string
  /** Coin objects created (empty when minted into the address balance). */
  coins: { objectId: string; version: string; digest: string; coinType: string; balance: string }[]
  /** Base-unit amounts minted, by coin type. */
  minted: Record<string, string>
}

/** Converts a decimal string to base units with `decimals` digits; rejects excess precision. */
export function toBaseUnits(value: string, decimals: number): bigint {
  const [whole = '0', fraction = ''] = value.split('.')
  if (fraction.length > decimals) throw new Error(`at most ${decimals} decimal places`)
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0')
}

/** Mints what `request` asks for. Defaults: 10 USDC and 1 SUI as coins. */
export function runFaucet(engine: LedgerEngine, request: FaucetRequest): FaucetResult {
  const address = normalizeSuiAddress(request.address)
  const into = request.into ?? 'coin'
  const plan: [string, bigint][] = [
    [engine.state.usdcType, toBaseUnits(request.usdc ?? '10', 6)],
    [SUI_TYPE, toBaseUnits(request.sui ?? '1', 9)],
  ]
  if (request.extra) plan.push([request.extra.coinType, request.extra.amount])
  const result: FaucetResult = { address, coins: [], minted: {} }
  for (const [coinType, amount] of plan) {
    if (amount === 0n) continue
    // Gas is always paid in SUI: keep SUI as a coin unless asked otherwise explicitly.
    const object = engine.mint({ address, coinType, amount, into })
    result.minted[coinType] = (BigInt(result.minted[coinType] ?? '0') + amount).toString()
    if (object?.coin) {
      result.coins.push({
        objectId: object.objectId,
        version: object.version.toString(),
        digest: object.digest,
        coinType: object.coin.coinType,
        balance: object.coin.balance.toString(),
      })
    }
  }
  return result
}
