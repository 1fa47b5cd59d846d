import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { entries, paidEntries } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import { catalogPage } from './page.js'

/** Debian's chromium (apt-get install chromium), or CHROMIUM_PATH. */
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const haveChromium = existsSync(executablePath)
/** Where the screenshots are saved for CI to keep (desktop and a 390 px phone). */
const screenshotPaths = {
  full: join('artifacts', 'catalog-page.png'),
  desktop: join('artifacts', 'catalog-page-1280.png'),
  phone: join('artifacts', 'catalog-page-390.png'),
}

/** In CI a missing browser is a failure, never a skip (as for PostgreSQL and Redis). */
const required = process.env.CI_REQUIRE_SERVICES === '1'

it.runIf(required && !haveChromium)('Chromium is installed (CI_REQUIRE_SERVICES=1)', () => {
  expect.fail(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`)
})

// Skipped only when no Chromium binary is installed (reason in the title); .ci/run installs Debian's.
describe.skipIf(!haveChromium)(`the catalog page in headless Chromium (${executablePath})`, () => {
  const catalog = defaultCatalog()
  let browser: Browser
  let server: Server
  let origin: string

  beforeAll(async () => {
    const options = {
      publicBaseUrl: 'http://127.0.0.1',
      payTo: '0x5c3b6f0c2a2d4d6e9f9e5c1b7a3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d',
      network: 'sui:mainnet',
      asset: '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
    }
    const html = catalogPage(catalog, options)
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] })
  })

  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('lists every service and every price, and a screenshot is saved', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${origin}/`)
    const headings = await page.locator('section h2').allInnerTexts()
    expect(headings.map((h) => h.split(' /')[0])).toEqual(catalog.services.map((s) => s.name))
    const rows = await page.locator('tr[id]').evaluateAll((trs) =>
      trs.map((tr) => ({
        path: tr.id,
        price: tr.querySelector('td.price')?.textContent ?? '',
      })),
    )
    expect(rows).toEqual(
      paidEntries(catalog).map(({ endpoint }) => ({
        path: endpoint.path,
        price: `${endpoint.price} USDC`,
      })),
    )
    await page.locator('details').first().click()
    // biome-ignore lint/performance/useDomNodeTextContent: rendered text shows the details opened
    expect(await page.locator('details pre').first().innerText()).toContain('curl -i -X POST')
    await mkdir('artifacts', { recursive: true })
    await page.screenshot({ path: screenshotPaths.full, fullPage: true })
    expect(existsSync(screenshotPaths.full)).toBe(true)
    await page.close()
  })

  for (const [name, width] of [
    ['desktop', 1280],
    ['phone', 390],
  ] as const) {
    it(`at ${width} px (${name}): no sideways scroll; the tag filter and the search narrow the list`, async () => {
      const page = await browser.newPage({ viewport: { width, height: 844 } })
      await page.goto(`${origin}/`)
      const overflow = () =>
        page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      expect(await overflow()).toBeLessThanOrEqual(0)
      const visible = () => page.locator('tr[data-tags]:visible').count()
      expect(await visible()).toBe(entries(catalog).length)

      await page.getByRole('button', { name: 'finance', exact: true }).click()
      const finance = entries(catalog).filter((e) => e.endpoint.tags.includes('finance'))
      expect(finance.length).toBeGreaterThan(0)
      expect(await visible()).toBe(finance.length)
      expect(await page.locator('#count').textContent()).toBe(
        `${finance.length} of ${entries(catalog).length} endpoints`,
      )
      const sections = await page.locator('main section:visible h2').allInnerTexts()
      expect(sections.map((h) => h.split(' /')[0])).toEqual(
        catalog.services
          .filter((s) => s.endpoints.some((e) => e.tags.includes('finance')))
          .map((s) => s.name),
      )
      // The same tag again clears it; a text search narrows by path, name or summary.
      await page.getByRole('button', { name: 'finance', exact: true }).click()
      await page.getByRole('searchbox').fill('weather')
      const ids = await page
        .locator('tr[data-tags]:visible')
        .evaluateAll((trs) => trs.map((tr) => tr.id))
      expect(ids).toEqual(['/openweather/v1/weather', '/openweather/v1/forecast'])
      expect(await overflow()).toBeLessThanOrEqual(0)
      await page.getByRole('searchbox').fill('')

      await page.locator('details').first().click()
      expect(await overflow()).toBeLessThanOrEqual(0)
      await mkdir('artifacts', { recursive: true })
      const path = screenshotPaths[name]
      await page.screenshot({ path })
      expect(existsSync(path)).toBe(true)
      await page.close()
    })
  }
})
