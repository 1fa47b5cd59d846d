/**
 * Test-only: a Sui wallet registered in the page through the Wallet Standard (`registerWallet`), as
 * a browser extension registers its own. The console's browser test bundles this file into an init
 * script. It holds no key: every signature is asked of the test through two functions it exposes to
 * the page (`page.exposeFunction`), which sign with an Ed25519 key funded by the local ledger's
 * faucet, building a transaction with the test's client of that ledger as a wallet does with its
 * full node.
 *
 * @module
 */
import { registerWallet, type Wallet, type WalletAccount } from '@mysten/wallet-standard'

declare global {
  interface Window {
    /** The test wallet's account, set by the test before this script runs. */
    tollgateTestAccount: { address: string; publicKey: string }
    tollgateTestSignPersonalMessage(message: string): Promise<{ bytes: string; signature: string }>
    tollgateTestSignTransaction(json: string): Promise<{ bytes: string; signature: string }>
  }
}

const chains = ['sui:mainnet'] as const
const features = ['sui:signPersonalMessage', 'sui:signTransaction'] as const
const { address, publicKey } = window.tollgateTestAccount
const account: WalletAccount = {
  address,
  publicKey: Uint8Array.from(atob(publicKey), (c) => c.charCodeAt(0)),
  chains,
  features,
}
const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes))

const wallet: Wallet = {
  version: '1.0.0',
  name: 'Tollgate Test Wallet',
  icon: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxIDEiLz4=',
  chains,
  get accounts() {
    return [account]
  },
  features: {
    'standard:connect': {
      version: '1.0.0',
      connect: async () => ({ accounts: [account] }),
    },
    'standard:events': { version: '1.0.0', on: () => () => {} },
    'sui:signPersonalMessage': {
      version: '1.1.0',
      signPersonalMessage: async (input: { message: Uint8Array }) =>
        window.tollgateTestSignPersonalMessage(toBase64(input.message)),
    },
    'sui:signTransaction': {
      version: '2.0.0',
      signTransaction: async (input: { transaction: { toJSON(): Promise<string> } }) =>
        window.tollgateTestSignTransaction(await input.transaction.toJSON()),
    },
  },
}

registerWallet(wallet)
