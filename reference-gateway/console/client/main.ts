/**
 * The console's browser code, bundled by `scripts/build-console.mjs` into `console.js`. It finds Sui
 * wallets through the Wallet Standard, signs in with a personal message, manages the owner's keys,
 * pays top-ups from the wallet (the top-up route's own 402, answered with an x402 payment the wallet
 * signed: no custody), and shows each key's usage and the gateway's check of its receipts.
 *
 * Everything the gateway or a wallet says is written into the page as text (`textContent`), never
 * as HTML.
 *
 * @module
 */
import { coinWithBalance, Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import {
  getWallets,
  isWalletWithRequiredFeatureSet,
  type WalletAccount,
  type WalletWithRequiredFeatures,
} from '@mysten/wallet-standard'
import { exactOffer, xPaymentHeader } from './x402.js'

type Config = {
  origin: string
  chain: `${string}:${string}`
  network: string
  asset: string
  payTo: string
  topUps: { usdc: string; units: string; path: string }[]
  testMoney: boolean
}

type Key = {
  id: string
  name: string | null
  hint: string
  credit: string
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
}

type Wallet = WalletWithRequiredFeatures & {
  features: WalletWithRequiredFeatures['features'] & {
    'sui:signPersonalMessage': {
      signPersonalMessage(input: {
        message: Uint8Array
        account: WalletAccount
        chain?: `${string}:${string}`
      }): Promise<{ bytes: string; signature: string }>
    }
    'sui:signTransaction': {
      signTransaction(input: {
        transaction: { toJSON(): Promise<string> }
        account: WalletAccount
        chain: `${string}:${string}`
      }): Promise<{ bytes: string; signature: string }>
    }
  }
}

const config = JSON.parse(document.getElementById('console-config')?.textContent ?? '{}') as Config
const root = document.getElementById('console') as HTMLElement

const state: {
  address: string | undefined
  wallet: Wallet | undefined
  account: WalletAccount | undefined
  keys: Key[]
  secret: { id: string; key: string } | undefined
} = { address: undefined, wallet: undefined, account: undefined, keys: [], secret: undefined }

type Child = Node | string | false | undefined | null

/** An element with attributes and children; text is always text. */
function h(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElement {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value)
  for (const child of children) {
    if (child === false || child === undefined || child === null) continue
    element.append(typeof child === 'string' ? document.createTextNode(child) : child)
  }
  return element
}

function button(label: string, onClick: () => unknown, attributes: Record<string, string> = {}) {
  const element = h('button', { type: 'button', ...attributes }, label)
  element.addEventListener('click', () => void onClick())
  return element
}

/** Shows a status line (errors in an alert). */
function say(text: string, kind: 'status' | 'alert' = 'status'): void {
  const line = document.getElementById('message')
  if (line === null) return
  line.setAttribute('role', kind)
  line.className = kind === 'alert' ? 'message error' : 'message'
  line.textContent = text
}

class ConsoleError extends Error {}

/** Calls the console's API; a failure throws its message. */
async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = init.method ?? 'GET'
  const response = await fetch(`/console/api/${path}`, {
    method,
    credentials: 'same-origin',
    headers:
      method === 'GET' ? {} : { 'content-type': 'application/json', 'x-tollgate-console': '1' },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  })
  const json = (await response.json().catch(() => ({}))) as {
    error?: { code?: string; message?: string }
  }
  if (!response.ok) {
    if (response.status === 401 && json.error?.code === 'sign_in_required') {
      state.address = undefined
    }
    throw new ConsoleError(json.error?.message ?? `The gateway answered ${response.status}.`)
  }
  return json as T
}

const short = (address: string) => `${address.slice(0, 6)}…${address.slice(-4)}`
const when = (iso: string | null) => (iso === null ? '—' : iso.slice(0, 16).replace('T', ' '))

function suiWallets(): Wallet[] {
  return getWallets()
    .get()
    .filter((wallet) =>
      isWalletWithRequiredFeatureSet(wallet, ['sui:signPersonalMessage', 'sui:signTransaction']),
    ) as Wallet[]
}

/** Connects `wallet` and picks its account (the signed-in one when it has it). */
async function connect(wallet: Wallet): Promise<WalletAccount> {
  const { accounts } = await wallet.features['standard:connect'].connect()
  const usable = accounts.filter((a) => a.chains.length === 0 || a.chains.includes(config.chain))
  const account =
    usable.find(
      (a) => state.address !== undefined && normalizeSuiAddress(a.address) === state.address,
    ) ?? usable[0]
  if (account === undefined)
    throw new ConsoleError(`${wallet.name} has no account on ${config.chain}.`)
  state.wallet = wallet
  state.account = account
  return account
}

async function signIn(wallet: Wallet): Promise<void> {
  say(`Asking ${wallet.name} to sign in…`)
  const account = await connect(wallet)
  const { nonce, message } = await api<{ nonce: string; message: string }>('nonce', {
    method: 'POST',
    body: { address: account.address },
  })
  const signed = await wallet.features['sui:signPersonalMessage'].signPersonalMessage({
    message: new TextEncoder().encode(message),
    account,
    chain: config.chain,
  })
  const { address } = await api<{ address: string }>('sign-in', {
    method: 'POST',
    body: { nonce, signature: signed.signature },
  })
  state.address = address
  say(`Signed in as ${short(address)}.`)
  await loadKeys()
}

async function signOut(): Promise<void> {
  await api('sign-out', { method: 'POST' })
  state.address = undefined
  state.keys = []
  state.secret = undefined
  say('Signed out.')
  render()
}

async function loadKeys(): Promise<void> {
  const { keys } = await api<{ keys: Key[] }>('keys')
  state.keys = keys
  render()
}

async function createKey(name: string): Promise<void> {
  const { key, secret } = await api<{ key: Key; secret: string }>('keys', {
    method: 'POST',
    body: { name },
  })
  state.secret = { id: key.id, key: secret }
  say(`Key ${key.name ?? key.id} created.`)
  await loadKeys()
}

async function revoke(key: Key): Promise<void> {
  if (!window.confirm(`Revoke ${key.name ?? key.id}? Calls with it are refused from now on.`))
    return
  await api(`keys/${key.id}/revoke`, { method: 'POST' })
  say(`Key ${key.name ?? key.id} revoked.`)
  await loadKeys()
}

/**
 * Pays a credit pack for `key` from the connected wallet: the top-up route's 402, its terms checked
 * against what this gateway publishes, a USDC transfer the wallet builds and signs, and the same
 * request again with the `X-PAYMENT` header. The gateway settles it and credits the key.
 */
async function topUp(key: Key, pack: Config['topUps'][number]): Promise<void> {
  const wallet = state.wallet
  const account = state.account
  if (wallet === undefined || account === undefined) {
    throw new ConsoleError('Connect your wallet first (Connect, above).')
  }
  const body = JSON.stringify({ key_id: key.id })
  const headers = { 'content-type': 'application/json' }
  const terms = await fetch(pack.path, { method: 'POST', headers, body })
  if (terms.status !== 402) throw new ConsoleError(`The top-up route answered ${terms.status}.`)
  const offer = exactOffer(await terms.json().catch(() => null), config.network)
  if (
    offer === undefined ||
    normalizeSuiAddress(offer.payTo) !== config.payTo ||
    normalizeStructTag(offer.asset) !== normalizeStructTag(config.asset) ||
    offer.maxAmountRequired !== pack.units
  ) {
    throw new ConsoleError(
      'The top-up terms differ from what this gateway publishes; nothing was signed.',
    )
  }
  say(`Asking ${wallet.name} to pay ${pack.usdc} USDC…`)
  const tx = new Transaction()
  tx.setSender(account.address)
  tx.transferObjects(
    [coinWithBalance({ type: config.asset, balance: BigInt(pack.units) })],
    config.payTo,
  )
  const signed = await wallet.features['sui:signTransaction'].signTransaction({
    // The wallet resolves the coins (the CoinWithBalance intent) with its own full node.
    transaction: { toJSON: () => tx.toJSON({ supportedIntents: ['CoinWithBalance'] }) },
    account,
    chain: config.chain,
  })
  const payment = xPaymentHeader(offer, signed)
  say('Paying…')
  for (let attempt = 0; ; attempt++) {
    const paid = await fetch(pack.path, {
      method: 'POST',
      headers: { ...headers, 'x-payment': payment },
      body,
    })
    const json = (await paid.json().catch(() => ({}))) as {
      credit?: string
      error?: string | { message?: string; code?: string }
    }
    const pending = paid.status === 402 && paid.headers.has('retry-after')
    if (pending && attempt < 5) {
      await new Promise((resolve) =>
        setTimeout(resolve, Number(paid.headers.get('retry-after') ?? 1) * 1000),
      )
      continue
    }
    if (!paid.ok) {
      const error = json.error
      const text = typeof error === 'string' ? error : (error?.message ?? `${paid.status}`)
      throw new ConsoleError(`The top-up was refused: ${text}`)
    }
    say(`Paid ${pack.usdc} USDC: the credit of ${key.name ?? key.id} is ${json.credit} USDC.`)
    break
  }
  await loadKeys()
}

type Usage = {
  days: {
    day: string
    model: string
    calls: number
    promptTokens: number
    completionTokens: number
    spent: string
  }[]
  recent: {
    id: string
    model: string
    state: string
    amount: string
    createdAt: string
    receiptId: string | null
  }[]
}

type Verification = {
  statement: string
  command: string
  result: {
    status: 'verified' | 'failed'
    code?: string
    testRoot: boolean
    steps: { step: string; status: string; detail: string; code?: string }[]
  }
}

function table(headings: string[], rows: Child[][], caption: string): HTMLElement {
  return h(
    'table',
    {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', { scope: 'col' }, t)))),
    h(
      'tbody',
      {},
      ...rows.map((cells) =>
        h('tr', {}, ...cells.map((c, j) => h('td', { 'data-label': headings[j] ?? '' }, c ?? ''))),
      ),
    ),
  )
}

async function showUsage(key: Key): Promise<void> {
  const panel = document.getElementById('usage') as HTMLElement
  const usage = await api<Usage>(`keys/${key.id}/usage`)
  const days =
    usage.days.length === 0
      ? h('p', {}, 'No served calls in the last 30 days.')
      : table(
          ['Day', 'Model', 'Calls', 'Tokens in', 'Tokens out', 'USDC spent'],
          usage.days.map((d) => [
            d.day,
            d.model,
            String(d.calls),
            String(d.promptTokens),
            String(d.completionTokens),
            d.spent,
          ]),
          'Per day (UTC) and model',
        )
  const verify = h('div', { id: 'verify', 'aria-live': 'polite' })
  const recent =
    usage.recent.length === 0
      ? h('p', {}, 'No calls yet.')
      : table(
          ['When', 'Call', 'Model', 'USDC', 'State', 'Receipt'],
          usage.recent.map((r) => [
            when(r.createdAt),
            h('code', {}, r.id),
            r.model,
            r.amount,
            r.state,
            r.receiptId === null
              ? '—'
              : h(
                  'span',
                  {},
                  h('code', {}, r.receiptId),
                  ' ',
                  button(
                    'Verify',
                    () => guarded(() => showVerification(key, r.receiptId!, verify)),
                    {
                      'aria-label': `Verify receipt ${r.receiptId}`,
                    },
                  ),
                ),
          ]),
          'Recent calls',
        )
  panel.replaceChildren(h('h2', {}, `Usage of ${key.name ?? key.id}`), days, recent, verify)
  panel.hidden = false
}

async function showVerification(key: Key, receiptId: string, into: HTMLElement): Promise<void> {
  into.replaceChildren(h('p', {}, `Checking ${receiptId}…`))
  const checked = await api<Verification>(
    `keys/${key.id}/receipts/${encodeURIComponent(receiptId)}/verify`,
  )
  const { result } = checked
  const verdict =
    result.status === 'verified'
      ? 'Verified by the gateway.'
      : result.code === 'anchor_pending'
        ? 'Verified by the gateway, except the ledger anchor: still pending. Check again in a few seconds.'
        : `Not verified (${result.code ?? 'failed'}).`
  into.replaceChildren(
    h('h3', {}, `Receipt ${receiptId}`),
    h('p', { class: 'vouch', role: 'note' }, checked.statement),
    h(
      'p',
      { class: result.status === 'verified' ? 'ok' : 'bad', 'data-verdict': result.status },
      verdict,
    ),
    h(
      'ol',
      { class: 'steps' },
      ...result.steps.map((s) =>
        h(
          'li',
          { 'data-status': s.status },
          `${s.status === 'passed' ? '✓' : s.status === 'failed' ? '✗' : '·'} ${s.detail}`,
        ),
      ),
    ),
    result.testRoot
      ? h(
          'p',
          { class: 'bad' },
          'TEST ROOT: the local stack’s simulated enclave; the quote proves nothing about hardware.',
        )
      : '',
    h('p', {}, 'Check it yourself, independently of this gateway:'),
    h('pre', {}, checked.command),
  )
}

/** Runs an action, reporting its failure on the page. */
async function guarded(action: () => Promise<unknown>): Promise<void> {
  try {
    await action()
  } catch (error) {
    say(error instanceof Error ? error.message : String(error), 'alert')
    if (state.address === undefined) render()
  }
}

function walletSection(): HTMLElement {
  const wallets = suiWallets()
  const section = h(
    'section',
    { 'aria-labelledby': 'wallet-title' },
    h('h2', { id: 'wallet-title' }, 'Wallet'),
  )
  if (wallets.length === 0) {
    section.append(
      h(
        'p',
        {},
        'No Sui wallet found in this browser. Install one that supports the Wallet Standard, then reload this page.',
      ),
    )
    return section
  }
  if (state.address === undefined) {
    section.append(
      h(
        'p',
        {},
        'Sign in with the wallet that owns your keys: it signs a one-time message; nothing is paid.',
      ),
      h(
        'div',
        { class: 'wallets' },
        ...wallets.map((w) => button(`Sign in with ${w.name}`, () => guarded(() => signIn(w)))),
      ),
    )
    return section
  }
  const connected =
    state.account === undefined
      ? h(
          'div',
          { class: 'wallets' },
          h('span', {}, 'To pay top-ups, connect the wallet: '),
          ...wallets.map((w) =>
            button(`Connect ${w.name}`, () =>
              guarded(async () => {
                await connect(w)
                render()
              }),
            ),
          ),
        )
      : h('p', {}, `Paying from ${state.wallet?.name ?? 'wallet'} ${short(state.account.address)}.`)
  section.append(
    h(
      'p',
      {},
      'Signed in as ',
      h('code', { id: 'owner' }, state.address),
      ' ',
      button('Sign out', () => guarded(signOut)),
    ),
    connected,
  )
  return section
}

function keysSection(): HTMLElement {
  const nameInput = h('input', {
    id: 'key-name',
    name: 'name',
    required: '',
    maxlength: '64',
    autocomplete: 'off',
  }) as HTMLInputElement
  const form = h(
    'form',
    { class: 'create' },
    h('label', { for: 'key-name' }, 'New key name'),
    nameInput,
    h('button', { type: 'submit' }, 'Create key'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void guarded(() => createKey(nameInput.value))
  })
  const secret =
    state.secret === undefined
      ? false
      : h(
          'div',
          { class: 'secret', role: 'status' },
          h('strong', {}, 'Your new key, shown once: '),
          h('code', { id: 'secret' }, state.secret.key),
          h(
            'p',
            {},
            'Copy it now: the gateway keeps only its hash. Use it as the openai SDK’s apiKey with baseURL ',
            h('code', {}, `${config.origin}/v1`),
            '.',
          ),
        )
  const rows = state.keys.map((key) => {
    const select = h(
      'select',
      { 'aria-label': `Top-up amount for ${key.name ?? key.id}` },
      ...config.topUps.map((p) => h('option', { value: p.usdc }, `${p.usdc} USDC`)),
    ) as HTMLSelectElement
    const revoked = key.revokedAt !== null
    const actions = revoked
      ? h('span', {}, `revoked ${when(key.revokedAt)}`)
      : h(
          'span',
          { class: 'actions' },
          select,
          button('Top up', () =>
            guarded(() =>
              topUp(key, config.topUps.find((p) => p.usdc === select.value) ?? config.topUps[0]!),
            ),
          ),
          button('Usage', () => guarded(() => showUsage(key))),
          button('Revoke', () => guarded(() => revoke(key)), { class: 'danger' }),
        )
    return [
      h('span', {}, key.name ?? '—', h('br'), h('code', {}, key.id)),
      h('code', {}, `…${key.hint}`),
      h('span', { 'data-credit': key.credit }, `${key.credit} USDC`),
      when(key.createdAt),
      when(key.lastUsedAt),
      actions,
    ]
  })
  const list =
    state.keys.length === 0
      ? h('p', {}, 'No keys yet.')
      : table(['Name', 'Key', 'Credit', 'Created', 'Last used', ''], rows, 'Your keys')
  list.querySelectorAll('tbody tr').forEach((tr, i) => {
    tr.setAttribute('data-key', state.keys[i]?.id ?? '')
  })
  return h(
    'section',
    { 'aria-labelledby': 'keys-title' },
    h('h2', { id: 'keys-title' }, 'Keys'),
    form,
    secret,
    list,
  )
}

function render(): void {
  const parts: Child[] = [
    h('p', { id: 'message', class: 'message', role: 'status' }),
    walletSection(),
  ]
  if (state.address !== undefined) {
    parts.push(keysSection(), h('section', { id: 'usage', hidden: '', 'aria-live': 'polite' }))
  }
  const previous = document.getElementById('message')?.textContent ?? ''
  const previousRole = document.getElementById('message')?.getAttribute('role') ?? 'status'
  root.replaceChildren(...parts.filter((p): p is Node => p instanceof Node))
  if (previous !== '') say(previous, previousRole === 'alert' ? 'alert' : 'status')
}

getWallets().on('register', () => render())
void (async () => {
  try {
    const me = await api<{ address: string }>('me')
    state.address = me.address
    // A wallet already connected to this page with the signed-in account pays without asking again.
    for (const wallet of suiWallets()) {
      const account = wallet.accounts.find((a) => normalizeSuiAddress(a.address) === me.address)
      if (account !== undefined) {
        state.wallet = wallet
        state.account = account
        break
      }
    }
    await loadKeys()
  } catch {
    render()
  }
})()
