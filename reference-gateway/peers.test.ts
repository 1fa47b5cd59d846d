import { describe, expect, it } from 'vitest'
import { gatewayPeers, missingPackages, missingPeersMessage, storeKindOf } from './peers.js'

describe('the gateway optional peers', () => {
  it('are Hono, its Node server, pino, prom-client and the driver of the store in use', () => {
    const base = { store: 'auto', databaseUrl: undefined, redisUrl: undefined } as const
    const always = ['hono', '@hono/node-server', 'pino', 'prom-client']
    expect(gatewayPeers(base)).toEqual([...always, 'better-sqlite3'])
    expect(gatewayPeers({ ...base, databaseUrl: 'postgres://db/x' })).toEqual([...always, 'pg'])
    expect(gatewayPeers({ ...base, redisUrl: 'redis://r:6379' })).toEqual([...always, 'ioredis'])
    expect(gatewayPeers({ ...base, store: 'memory' })).toEqual(always)
    expect(storeKindOf({ ...base, store: 'sqlite', databaseUrl: 'postgres://db/x' })).toBe('sqlite')
  })

  it('names only the packages that are not installed, in one line with the npm install to run', async () => {
    const missing = await missingPackages(['hono', 'tollgate-no-such-package', 'pino'])
    expect(missing).toEqual(['tollgate-no-such-package'])
    const message = missingPeersMessage(['hono', '@hono/node-server'])
    expect(message).not.toContain('\n')
    expect(message).toMatch(/: npm install hono @hono\/node-server$/)
  })
})
