import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { configProblems, describeConfig, loadConfig } from './config.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-config-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

function problems(run: () => unknown): string[] {
  try {
    run()
  } catch (error) {
    const found = configProblems(error)
    if (found !== undefined) return [...found]
    throw error
  }
  throw new Error('expected an invalid_config error')
}

describe('loadConfig', () => {
  it('has embedded defaults for everything', () => {
    const config = loadConfig({ env: {} })
    expect(config).toMatchObject({
      port: 4020,
      host: '127.0.0.1',
      store: 'auto',
      upstreams: 'auto',
      dataDir: '.data/gateway',
      maxBodyBytes: 1024 * 1024,
      network: 'sui:mainnet',
    })
    expect(config.ledgerUrl).toBeUndefined()
    expect(config.providerKeys).toEqual({})
  })

  it('reads the MPP realm (default: none, the host name of the public URL), and refuses a bad one', () => {
    expect(loadConfig({ env: {} }).mppRealm).toBeUndefined()
    expect(loadConfig({ env: { MPP_REALM: 'pay.example.com' } }).mppRealm).toBe('pay.example.com')
    expect(problems(() => loadConfig({ env: { MPP_REALM: 'a b\nSYSTEM' } })).join(' ')).toContain(
      'MPP_REALM',
    )
  })

  it('reads the minimum value of a counted review (default 0.10 USDC), and refuses a bad one', () => {
    expect(loadConfig({ env: {} }).reviewMinValue).toBe('0.10')
    expect(loadConfig({ env: { REVIEW_MIN_VALUE: '1.5' } }).reviewMinValue).toBe('1.5')
    expect(problems(() => loadConfig({ env: { REVIEW_MIN_VALUE: 'lots' } })).join(' ')).toContain(
      'REVIEW_MIN_VALUE',
    )
  })

  it('reads environment variables, provider keys and upstream URL overrides', () => {
    const config = loadConfig({
      env: {
        PORT: '8080',
        LEDGER_URL: 'https://fullnode.mainnet.sui.io:443',
        CHALLENGE_SECRETS: 'a'.repeat(32) + ', ' + 'b'.repeat(40),
        OPENAI_API_KEY: 'sk-1',
        FAL_KEY: 'fal-1',
        UPSTREAM_URL_OPENAI: 'https://proxy.internal/v1',
        TRUST_PROXY: 'yes',
        HOME: '/root',
      },
    })
    expect(config.port).toBe(8080)
    expect(config.challengeSecrets).toEqual(['a'.repeat(32), 'b'.repeat(40)])
    expect(config.providerKeys).toEqual({ OPENAI_API_KEY: 'sk-1', FAL_KEY: 'fal-1' })
    expect(config.upstreamUrls).toEqual({ openai: 'https://proxy.internal/v1' })
    expect(config.trustProxy).toBe(true)
  })

  it('reads the serve lease and the lease sweeper, defaults 30 s, 10 s and 10 s', () => {
    expect(loadConfig({ env: {} })).toMatchObject({
      serveLeaseMs: 30_000,
      leaseSweepIntervalMs: 10_000,
      leaseSweepGraceMs: 10_000,
    })
    const config = loadConfig({
      env: { SERVE_LEASE_MS: '5000', LEASE_SWEEP_INTERVAL_MS: '250', LEASE_SWEEP_GRACE_MS: '0' },
    })
    expect(config).toMatchObject({
      serveLeaseMs: 5_000,
      leaseSweepIntervalMs: 250,
      leaseSweepGraceMs: 0,
    })
    const found = problems(() =>
      loadConfig({ env: { SERVE_LEASE_MS: '10', LEASE_SWEEP_GRACE_MS: '-1' } }),
    )
    expect(found.some((p) => p.startsWith('SERVE_LEASE_MS (serveLeaseMs):'))).toBe(true)
    expect(found.some((p) => p.startsWith('LEASE_SWEEP_GRACE_MS (leaseSweepGraceMs):'))).toBe(true)
  })

  it('reads the claim lease, default 5 minutes, at least 1 s', () => {
    expect(loadConfig({ env: {} }).claimLeaseMs).toBe(300_000)
    expect(loadConfig({ env: { CLAIM_LEASE_MS: '20000' } }).claimLeaseMs).toBe(20_000)
    const found = problems(() => loadConfig({ env: { CLAIM_LEASE_MS: '999' } }))
    expect(found.some((p) => p.startsWith('CLAIM_LEASE_MS (claimLeaseMs):'))).toBe(true)
  })

  it('reads how many tokens one hold of a session pays for, default 16, 1 to 10 000', () => {
    expect(loadConfig({ env: {} }).sessionUnitWindow).toBe(16)
    expect(loadConfig({ env: { SESSION_UNIT_WINDOW: '1' } }).sessionUnitWindow).toBe(1)
    for (const bad of ['0', '10001', '2.5', 'many']) {
      const found = problems(() => loadConfig({ env: { SESSION_UNIT_WINDOW: bad } }))
      expect(found.some((p) => p.startsWith('SESSION_UNIT_WINDOW (sessionUnitWindow):'))).toBe(true)
    }
  })

  it('merges a JSON file under the environment, and overrides over both', () => {
    const file = join(folder, 'settings.json')
    writeFileSync(file, JSON.stringify({ port: 5000, host: '0.0.0.0', logLevel: 'warn' }))
    const config = loadConfig({ env: { PORT: '6000' }, file, overrides: { logLevel: 'debug' } })
    expect(config).toMatchObject({ port: 6000, host: '0.0.0.0', logLevel: 'debug' })
  })

  it('names each bad setting by its variable and key, never echoing a secret', () => {
    const found = problems(() =>
      loadConfig({
        env: { PORT: '70000', OPERATOR_KEY: 'hunter2-secret', STORE: 'mongo' },
      }),
    )
    expect(found.some((p) => p.startsWith('PORT (port):'))).toBe(true)
    expect(found.some((p) => p.startsWith('OPERATOR_KEY (operatorKey):'))).toBe(true)
    expect(found.some((p) => p.startsWith('STORE (store):'))).toBe(true)
    expect(found.join('\n')).not.toContain('hunter2')
  })

  it('refuses short challenge secrets and unknown file keys', () => {
    expect(problems(() => loadConfig({ env: { CHALLENGE_SECRETS: 'short' } }))[0]).toMatch(
      /^CHALLENGE_SECRETS \(challengeSecrets\.0\): each secret must be at least 32 bytes/,
    )
    const file = join(folder, 'typo.json')
    writeFileSync(file, JSON.stringify({ prot: 1 }))
    expect(problems(() => loadConfig({ env: {}, file }))[0]).toMatch(/unknown setting\(s\) prot/)
  })

  it('says when the file is missing or not JSON', () => {
    expect(problems(() => loadConfig({ env: {}, file: join(folder, 'absent.json') }))[0]).toMatch(
      /cannot read/,
    )
    const file = join(folder, 'bad.json')
    writeFileSync(file, '{ nope')
    expect(problems(() => loadConfig({ env: {}, file }))[0]).toMatch(/not valid JSON/)
  })

  it('describeConfig hides secrets and key values', () => {
    const shown = describeConfig(
      loadConfig({
        env: { DATABASE_URL: 'postgres://u:pw@db/x', OPENAI_API_KEY: 'sk-secret' },
      }),
    )
    expect(JSON.stringify(shown)).not.toContain('pw@db')
    expect(JSON.stringify(shown)).not.toContain('sk-secret')
    expect(shown.providerKeys).toEqual(['OPENAI_API_KEY'])
  })
})
