/**
 * The core and the Hono adapter import no Node built-in module: bundled for a Web-standard runtime,
 * nothing `node:` is left to load. (`webRuntime.int.test.ts` runs the bundle under workerd.)
 */
import { describe, expect, it } from 'vitest'
import { bundleForWeb } from './webRuntime/bundle.js'

describe('bundled for a Web-standard runtime', () => {
  it.each(['src/index.ts', 'adapters/hono.ts'])('%s imports no Node module', async (entry) => {
    const { code, nodeImports } = await bundleForWeb(entry)
    expect(code.length).toBeGreaterThan(10_000)
    expect(nodeImports).toEqual([])
  })
})
