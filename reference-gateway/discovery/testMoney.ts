/**
 * The notice a gateway on the local ledger emulator shows everywhere a buyer looks (the catalog
 * page, `llms.txt`, the start banner): its payments are test money, and how to pay it — a wallet,
 * test USDC from the emulator's faucet, and a `tollgate pay` line against its ledger.
 *
 * @module
 */
import { type Catalog, paidEntries } from '../catalog/catalog.js'
import { shellQuote } from './page.js'

/** How to pay a gateway that runs on the emulator. */
export type TestMoneyNotice = {
  /** One sentence: payments here are not real money, and where the ledger is. */
  headline: string
  /** Shell commands, in order: make a wallet, fund it from the faucet, pay one endpoint. */
  commands: readonly string[]
}

/**
 * The test-money notice of a gateway whose ledger is the emulator at `ledgerUrl`, paying the
 * catalog's first paid endpoint with its example body.
 *
 * @example
 * ```ts
 * testMoneyNotice(catalog, { publicBaseUrl: 'http://127.0.0.1:4020', ledgerUrl: emulator.url })
 * ```
 */
export function testMoneyNotice(
  catalog: Catalog,
  options: { publicBaseUrl: string; ledgerUrl: string },
): TestMoneyNotice {
  const base = options.publicBaseUrl.replace(/\/+$/, '')
  const ledger = options.ledgerUrl.replace(/\/+$/, '')
  const first = paidEntries(catalog)[0]
  const pay =
    first === undefined
      ? `npx tollgate pay --ledger ${ledger} POST ${shellQuote(`${base}/<endpoint>`)} -d '{}'`
      : `npx tollgate pay --ledger ${ledger} POST ${shellQuote(`${base}${first.endpoint.path}`)} -d ${shellQuote(JSON.stringify(first.endpoint.shape.example))}`
  return {
    headline: `TEST MONEY: this gateway runs on a local Sui ledger emulator (${ledger}). Payments to it are not real money; real USDC sent here is not accepted.`,
    commands: [
      'npx tollgate wallet new',
      `npx tollgate wallet fund --ledger ${ledger} --usdc 1`,
      pay,
    ],
  }
}
