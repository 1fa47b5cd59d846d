/**
 * What every example shares: a local ledger emulator started in-process (payments on it are NOT
 * real), a funded seller wallet, and a buyer that pays with `tollgate/client` to show the route
 * working. In your own app you only need the `paywall(...)` part of each example.
 */
import { relative } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createPayingFetch } from 'tollgate/client'
import { type StartedLedger, startLedger } from 'tollgate/testing'

/** The local setting of an example. */
export type Local = {
  ledger: StartedLedger
  /** The seller: receives payments and, as refund signer, pays refunds back. */
  seller: Ed25519Keypair
  /** A challenge secret for this run (in production: from your secret store, ≥ 32 bytes). */
  secret: string
  /** The port to listen on: `PORT` or 3000. */
  port: number
  /** Pays for `url` once as a buyer would, prints what happened, and keeps serving (or exits with `--once`). */
  demo(url: string, close: () => void): Promise<void>
  /** For the server's `error` event: says in one line why it could not listen (a busy port), and exits 2. */
  listenFailed(error: Error): void
}

/** Starts the emulator and the wallets. */
export async function startLocal(): Promise<Local> {
  const ledger = await startLedger()
  console.log(`Local ledger emulator at ${ledger.url} (test money only, not real).`)
  const seller = ledger.createTestWallet({ usdc: '1' })
  const buyer = ledger.createTestWallet({ usdc: '5' })
  const secret = `example-secret-${crypto.randomUUID()}`
  const port = Number(process.env.PORT ?? 3000)
  return {
    ledger,
    seller,
    secret,
    port,
    listenFailed(error) {
      const code = (error as { code?: unknown }).code
      console.error(
        code === 'EADDRINUSE'
          ? `Port ${port} is already in use: stop what listens there, or run with another port (PORT=${port + 1} npx tsx ${relative(process.cwd(), process.argv[1] ?? '')}).`
          : `Cannot listen on 127.0.0.1:${port}: ${error.message}`,
      )
      void ledger.stop().finally(() => process.exit(2))
    },
    async demo(url, close) {
      const unpaid = await fetch(url)
      console.log(`\nGET ${url} without paying → ${unpaid.status}`)
      console.log(`  WWW-Authenticate: ${unpaid.headers.get('www-authenticate')?.slice(0, 72)}…`)
      console.log(`  PAYMENT-REQUIRED: ${unpaid.headers.get('payment-required')?.slice(0, 72)}…`)
      console.log(`  body: ${(await unpaid.text()).slice(0, 160)}…`)

      const pay = createPayingFetch({ signer: buyer, ledger: ledger.url, limits: false })
      const paid = await pay(url)
      console.log(
        `\nThe same request paid by ${buyer.toSuiAddress().slice(0, 10)}… → ${paid.status}`,
      )
      // The client pays x402 version 2 when offered, answered with PAYMENT-RESPONSE.
      console.log(`  PAYMENT-RESPONSE: ${paid.headers.get('payment-response')?.slice(0, 60)}…`)
      console.log(`  body: ${await paid.text()}`)
      if (process.argv.includes('--once')) {
        close()
        await ledger.stop()
        return
      }
      console.log(`\nServing ${url} — try: curl -i ${url}   (Ctrl-C to stop)`)
    },
  }
}
