/**
 * The owner's console in headless Chromium, against the embedded gateway (the ledger emulator,
 * SQLite, the stub model and the simulated enclave): a test wallet registered in the page through
 * the Wallet Standard signs in, creates a key, the secret works with the `openai` SDK, the wallet
 * pays a 1 USDC top-up through the public top-up route (balances read from the ledger), the key's
 * credit shows it, a confidential call appears in the usage with its receipt verified by the
 * gateway, and the revoked key gets 401. The page stays within a 390 px phone's width.
 *
 * The wallet holds no key in the page: its two signing features call functions the test exposes
 * (`page.exposeFunction`), which sign with an Ed25519 key from the ledger's faucet — and build the
 * transaction with the test's client of that ledger, as a wallet does with its full node.
 *
 * A screenshot is written to `artifacts/console.png`, and to `docs/images/console.png` (shown in
 * docs/inference.md) only with `UPDATE_SCREENSHOTS=1`, so CI leaves the tree clean.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { build } from 'esbuild'
import OpenAI from 'openai'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { defaultConfidentialModelId } from '../inference/models.js'
import { type MoneyStack, startMoneyStack, usdcOf } from '../testHelpers.js'

/** Debian's chromium (apt-get install chromium), or CHROMIUM_PATH. */
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const haveChromium = existsSync(executablePath)
/** In CI a missing browser is a failure, never a skip (as for PostgreSQL and Redis). */
const required = process.env.CI_REQUIRE_SERVICES === '1'
const root = join(import.meta.dirname, '..', '..')

it.runIf(required && !haveChromium)('Chromium is installed (CI_REQUIRE_SERVICES=1)', () => {
  expect.fail(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`)
})

/** The test wallet's init script: its account, then `client/testWallet.ts` bundled. */
async function testWalletScript(wallet: Ed25519Keypair): Promise<string> {
  const bundled = await build({
    entryPoints: [join(import.meta.dirname, 'client', 'testWallet.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    tsconfig: join(root, 'tsconfig.json'),
    logLevel: 'warning',
  })
  const account = {
    address: wallet.toSuiAddress(),
    publicKey: toBase64(wallet.getPublicKey().toRawBytes()),
  }
  return `window.tollgateTestAccount = ${JSON.stringify(account)};\n${bundled.outputFiles[0]?.text}`
}

// Skipped only when no Chromium binary is installed (reason in the title); .ci/run installs Debian's.
describe.skipIf(!haveChromium)(
  `the owner's console in headless Chromium (${executablePath})`,
  () => {
    let stack: MoneyStack
    let browser: Browser
    let page: Page
    let wallet: Ed25519Keypair
    const signed: { messages: string[]; transactions: number } = { messages: [], transactions: 0 }

    beforeAll(async () => {
      // The served files, built as `npm run build` and `npm run demo` build them.
      execFileSync(process.execPath, [join(root, 'scripts', 'build-console.mjs'), '--quiet'], {
        stdio: 'inherit',
      })
      stack = await startMoneyStack()
      wallet = stack.emulator.createTestWallet({ usdc: '5', sui: '1' })
      browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] })
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      await context.exposeFunction('tollgateTestSignPersonalMessage', async (message: string) => {
        const bytes = fromBase64(message)
        signed.messages.push(new TextDecoder().decode(bytes))
        return wallet.signPersonalMessage(bytes)
      })
      await context.exposeFunction('tollgateTestSignTransaction', async (json: string) => {
        signed.transactions++
        const tx = Transaction.from(json)
        tx.setSenderIfNotSet(wallet.toSuiAddress())
        const bytes = await tx.build({ client: stack.ledger })
        const { signature } = await wallet.signTransaction(bytes)
        return { bytes: toBase64(bytes), signature }
      })
      await context.addInitScript({ content: await testWalletScript(wallet) })
      page = await context.newPage()
    })

    afterAll(async () => {
      await browser?.close()
      await stack?.close()
    })

    const gateway = () => stack.gateway
    const openai = (apiKey: string) =>
      new OpenAI({ apiKey, baseURL: `${gateway().url}/v1`, maxRetries: 0 })
    const message = () => page.locator('#message')

    it('signs in with the wallet, makes a key, is paid a top-up from the wallet, shows usage and a verified receipt, and revokes', async () => {
      await page.goto(`${gateway().url}/console`)
      await page.getByRole('button', { name: 'Sign in with Tollgate Test Wallet' }).click()
      await expect.poll(() => page.locator('#owner').textContent()).toBe(wallet.toSuiAddress())
      expect(signed.messages).toHaveLength(1)
      expect(signed.messages[0]).toContain(
        `${new URL(gateway().url).host} wants you to sign in to the Tollgate console with your Sui account:\n${wallet.toSuiAddress()}`,
      )

      // A key: its secret shown once, and it works with the openai SDK (accepted, no credit yet).
      await page.getByLabel('New key name').fill('laptop')
      await page.getByRole('button', { name: 'Create key' }).click()
      const secret = (await page.locator('#secret').textContent({ timeout: 10_000 })) ?? ''
      expect(secret).toMatch(/^tg_[A-Za-z0-9_-]{43}$/)
      const row = page.locator('tr[data-key]')
      await expect.poll(() => row.count()).toBe(1)
      const keyId = (await row.getAttribute('data-key')) ?? ''
      expect(keyId).toMatch(/^key_/)
      expect((await gateway().inference.keys.get(keyId))?.owner).toBe(wallet.toSuiAddress())
      const noCredit = await openai(secret)
        .chat.completions.create({
          model: defaultConfidentialModelId,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .catch((error: unknown) => error)
      expect(noCredit).toMatchObject({ status: 402, code: 'insufficient_credit' })
      const wrong = await openai(`${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`)
        .chat.completions.create({
          model: defaultConfidentialModelId,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .catch((error: unknown) => error)
      expect(wrong).toMatchObject({ status: 401 })

      // A 1 USDC top-up paid from the wallet, through the public top-up route's 402.
      const before = {
        buyer: await usdcOf(stack, wallet.toSuiAddress()),
        seller: await usdcOf(stack, gateway().payTo),
      }
      await row.getByRole('combobox').selectOption('1')
      await row.getByRole('button', { name: 'Top up' }).click()
      await expect
        .poll(() => message().textContent(), { timeout: 20_000 })
        .toBe('Paid 1 USDC: the credit of laptop is 1.000000 USDC.')
      await expect.poll(() => row.locator('[data-credit]').textContent()).toBe('1.000000 USDC')
      expect(signed.transactions).toBe(1)
      expect(await usdcOf(stack, wallet.toSuiAddress())).toBe(before.buyer - 1_000_000n)
      expect(await usdcOf(stack, gateway().payTo)).toBe(before.seller + 1_000_000n)

      // A confidential call with the key; its receipt appears in the usage and verifies.
      const { data, response } = await openai(secret)
        .chat.completions.create({
          model: defaultConfidentialModelId,
          messages: [{ role: 'user', content: 'Say hello' }],
        })
        .withResponse()
      expect(data.choices[0]?.message.content).toBeTruthy()
      const receiptId = response.headers.get('x-receipt-id') ?? ''
      const callId = response.headers.get('x-call-id') ?? ''
      expect(receiptId).not.toBe('')
      await page.reload()
      await row.getByRole('button', { name: 'Usage' }).click()
      const usage = page.locator('#usage')
      await expect
        .poll(() => usage.locator('table').first().textContent())
        .toContain(defaultConfidentialModelId)
      const recent = usage.locator('table').nth(1)
      expect(await recent.textContent()).toContain(callId)
      const verify = usage.getByRole('button', { name: `Verify receipt ${receiptId}` })
      // The gateway anchors a receipt on the ledger a moment after the answer: check until it has.
      await expect
        .poll(
          async () => {
            await verify.click()
            await page.locator('[data-verdict]').waitFor()
            return page.locator('#verify p.ok, #verify p.bad').first().textContent()
          },
          { timeout: 30_000, interval: 500 },
        )
        .toBe('Verified by the gateway.')
      const panel = page.locator('#verify')
      expect(await panel.locator('li[data-status=passed]').count()).toBe(9)
      expect(await panel.textContent()).toContain('it is the gateway vouching for itself')
      expect(await panel.locator('pre').textContent()).toBe(
        `npx tollgate verify ${receiptId} --inference-url ${gateway().url} --payment ${keyId}:${callId} --allow-test-root`,
      )
      await page.screenshot({ path: join('artifacts', 'console.png'), fullPage: true })
      if (process.env.UPDATE_SCREENSHOTS === '1') {
        mkdirSync(join(root, 'docs', 'images'), { recursive: true })
        await page.screenshot({ path: join(root, 'docs', 'images', 'console.png'), fullPage: true })
      }

      // Readable on a 390 px phone: nothing wider than the screen.
      await page.setViewportSize({ width: 390, height: 844 })
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390,
      )
      await page.setViewportSize({ width: 1280, height: 900 })

      // Revoked: the key gets 401.
      page.once('dialog', (dialog) => void dialog.accept())
      await row.getByRole('button', { name: 'Revoke' }).click()
      await expect.poll(() => row.textContent()).toContain('revoked')
      const revoked = await openai(secret)
        .chat.completions.create({
          model: defaultConfidentialModelId,
          messages: [{ role: 'user', content: 'hi' }],
        })
        .catch((error: unknown) => error)
      expect(revoked).toMatchObject({ status: 401 })

      // Signing out ends the sign-in: the page offers to sign in again.
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByRole('button', { name: 'Sign in with Tollgate Test Wallet' }).waitFor()
      expect((await page.request.get(`${gateway().url}/console/api/keys`)).status()).toBe(401)
    })
  },
)
