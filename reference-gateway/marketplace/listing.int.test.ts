/**
 * Listing end to end on the local stack (issue acceptance): the gateway with its embedded ledger
 * emulator; a seller built with each adapter (Express, Koa, Hono) on 127.0.0.1 whose agent is
 * registered on the ledger prepares, signs (Sui personal message) and submits its endpoint through
 * the gateway's routes → listed, found in `/v1/services` and `/discovery/resources`, and seen on
 * the catalog page in headless Chromium with its state; a payment settled through the gateway, and
 * one made directly to a listed seller and reported, appear in the page's feed without a reload.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { type Browser, chromium, type Page } from 'playwright-core'
import { createPayingFetch, paymentOf } from 'tollgate/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from '../../conformance/fixtures/agent.js'
import {
  type AdapterName,
  adapterNames,
  type RunningSeller,
  startSeller,
} from '../../conformance/fixtures/sellers.js'
import { useTestGateway } from '../server/testHelpers.js'
import { postJson, submitListing } from './testHelpers.js'

/** Debian's chromium (apt-get install chromium), or CHROMIUM_PATH. */
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const haveChromium = existsSync(executablePath)
/** In CI a missing browser is a failure, never a skip (as for PostgreSQL and Redis). */
const required = process.env.CI_REQUIRE_SERVICES === '1'

it.runIf(required && !haveChromium)('Chromium is installed (CI_REQUIRE_SERVICES=1)', () => {
  expect.fail(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`)
})

type Seller = {
  adapter: AdapterName
  agent: Ed25519Keypair
  running: RunningSeller
  listing: Record<string, unknown>
}

// Skipped only when no Chromium binary is installed (reason in the title); .ci/run installs Debian's.
describe.skipIf(!haveChromium)(
  `a seller per adapter, listed end to end and seen in headless Chromium (${executablePath})`,
  () => {
    const gateway = useTestGateway({
      config: {
        challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
        store: 'sqlite',
        upstreams: 'stub',
        // The sellers listen on 127.0.0.1; private addresses are off unless set.
        listingAllowPrivateNetwork: true,
      },
    })
    let browser: Browser
    const sellers: Seller[] = []

    beforeAll(async () => {
      // The local stack: the gateway starts its own ledger emulator; listing probes may reach
      // 127.0.0.1 on it, and gate a reads the emulator's agent registry.
      browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] })
    })

    afterAll(async () => {
      await browser?.close()
      for (const seller of sellers) await seller.running.close()
    })

    it('lists each seller: agent registered, prepare, sign, submit', async () => {
      const client = gateway.ledgerClient
      for (const adapter of adapterNames) {
        const agent = gateway.emulator.createTestWallet({ usdc: '0' })
        await registerAgent(client, agent, gateway.emulator.modulesPackage, `seller-${adapter}`)
        const running = await startSeller(
          { ledgerUrl: gateway.emulator.url, wallet: agent.toSuiAddress() },
          { adapter },
        )
        const answer = await submitListing(`${gateway.url}/v1/agent`, agent, {
          url: running.url,
          name: `Answer by ${adapter}`,
          description: `A seller built with tollgate/${adapter}`,
          tags: ['qa', adapter],
        })
        sellers.push({ adapter, agent, running, listing: answer.json })
        expect(answer.status, JSON.stringify(answer.json)).toBe(201)
        expect(answer.json).toMatchObject({
          seller: agent.toSuiAddress(),
          url: running.url,
          state: 'listed',
          price: '20000',
        })
      }
    })

    it('shows them in /v1/services and /discovery/resources', async () => {
      expect(sellers).toHaveLength(3)
      for (const { agent, running, listing } of sellers) {
        const address = agent.toSuiAddress()
        const services = (await (
          await fetch(`${gateway.url}/v1/services?seller=${address}`)
        ).json()) as { items: Record<string, unknown>[]; total: number }
        expect(services).toMatchObject({
          total: 1,
          items: [{ source: 'seller', id: listing.id, url: running.url, price: '20000' }],
        })
        const resources = (await (
          await fetch(`${gateway.url}/discovery/resources?payTo=${address}`)
        ).json()) as { items: { resource: string; accepts: { payTo: string }[] }[] }
        expect(resources.items.map((i) => [i.resource, i.accepts[0]?.payTo])).toEqual([
          [running.url, address],
        ])
      }
    })

    /** The listed sellers' rows as the page shows them, top to bottom. */
    const shownRows = (page: Page) =>
      page.locator('#sellers tr[data-listing]').evaluateAll((trs) =>
        trs.map((tr) => ({
          id: (tr as HTMLElement).dataset.listing,
          name: tr.querySelector('.name')?.textContent,
          endpoint: tr.querySelector('td code')?.textContent,
          price: tr.querySelector('td.price')?.textContent,
          state: tr.querySelector('td.state')?.textContent,
          seller: tr.querySelector('a code')?.getAttribute('title'),
          rating: tr.querySelector('.rating')?.textContent,
        })),
      )

    it('shows them on the catalog page with their state, and the filter finds them', async () => {
      expect(sellers).toHaveLength(3)
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      await page.goto(`${gateway.url}/`)
      expect(await shownRows(page)).toEqual(
        // Newest first.
        [...sellers].reverse().map(({ adapter, agent, running, listing }) => ({
          id: listing.id,
          name: `Answer by ${adapter}`,
          endpoint: `POST ${running.url}`,
          price: '0.020000 USDC',
          state: 'listed',
          seller: agent.toSuiAddress(),
          rating: 'no reviews yet',
        })),
      )
      expect(await page.locator('header p').first().textContent()).toContain(
        '3 listed seller endpoints',
      )
      await page.getByRole('searchbox').fill('tollgate/koa')
      const visible = await page
        .locator('tr[data-tags]:visible')
        .evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.listing))
      expect(visible).toEqual([sellers.find((s) => s.adapter === 'koa')?.listing.id])
      await page.close()
    })

    it('without sideways scroll on a 390 px phone', async () => {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } })
      await page.goto(`${gateway.url}/`)
      expect(await page.locator('#sellers tr[data-listing]:visible').count()).toBe(3)
      expect(
        await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
      ).toBeLessThanOrEqual(0)
      await page.close()
    })

    it('adds payments to the feed live: one through the gateway, one reported to a seller', async () => {
      expect(sellers).toHaveLength(3)
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      await page.goto(`${gateway.url}/`)
      // Set on this document: a reload or navigation would lose it.
      await page.evaluate(() => {
        ;(window as unknown as { sameDocument: boolean }).sameDocument = true
      })
      const before = await page.locator('#feed li').count()
      const buyer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
      const pay = createPayingFetch({ signer: buyer, ledger: gateway.emulator.url, limits: false })
      const newest = async (digest: string) => {
        await page.waitForFunction(
          (d) => document.querySelector('#feed li')?.getAttribute('data-digest') === d,
          digest,
          { timeout: 20_000 },
        )
        return page.locator('#feed li').first().textContent()
      }

      const call = await pay(`${gateway.url}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(call.status).toBe(200)
      const sale = paymentOf(call)
      if (sale === undefined) throw new Error('no payment')
      const short = (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`
      const gatewayText = await newest(sale.digest)
      expect(gatewayText).toContain(
        `from ${short(buyer.toSuiAddress())} to ${short(gateway.payTo)}`,
      )
      expect(gatewayText).toContain('through the gateway')

      // Paid directly to the Koa seller, then reported: it enters once the ledger confirms it.
      const koa = sellers.find((s) => s.adapter === 'koa') as Seller
      const direct = await pay(koa.running.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(direct.status).toBe(200)
      expect(await direct.json()).toEqual({ answer: 42 })
      const bought = paymentOf(direct)
      if (bought === undefined) throw new Error('no payment')
      const reported = await postJson(`${gateway.url}/api/mpp/report`, {
        digest: bought.digest,
        seller: koa.agent.toSuiAddress(),
      })
      expect(reported.status, JSON.stringify(reported.json)).toBe(201)
      const reportText = await newest(bought.digest)
      expect(reportText).toContain(
        `0.020000 USDC from ${short(buyer.toSuiAddress())} to ${short(koa.agent.toSuiAddress())}`,
      )
      expect(reportText).toContain('reported, found on the ledger')

      const digests = await page
        .locator('#feed li')
        .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-digest')))
      expect(digests.slice(0, 2)).toEqual([bought.digest, sale.digest])
      expect(digests).toHaveLength(before + 2)
      // Kept by CI beside the catalog page's own screenshots.
      mkdirSync('artifacts', { recursive: true })
      await page.screenshot({
        path: join('artifacts', 'catalog-page-marketplace.png'),
        fullPage: true,
      })
      expect(
        await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument),
      ).toBe(true)
      await page.close()
    })
  },
)
