/**
 * When the gateway offers sessions, and when it says why not: a channel package without its
 * registry stops the start naming both settings; sessions off, no channel package, or an operator
 * key that is not the payee's leave one-off payments only, with the reason.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config.js'
import { defaultModel } from '../inference/models.js'
import { keylessTokenPrice, openGatewaySessions } from './sessions.js'
import { createCleanups } from './shutdown.js'

const silent = { info() {}, warn() {}, error() {}, debug() {} }
const operator = new Ed25519Keypair()
const pkg = `0x${'1'.repeat(64)}`

function open(env: Record<string, string>, ledger: { payTo?: string; local?: boolean } = {}) {
  return openGatewaySessions({
    config: loadConfig({ env }),
    ledger: {
      operator,
      payTo: ledger.payTo ?? operator.toSuiAddress(),
      ledgerUrl: 'http://127.0.0.1:1',
      local:
        ledger.local === true
          ? {
              url: 'http://127.0.0.1:1',
              modulesPackage: pkg,
              escrow: { config: pkg },
              channel: { registry: pkg },
            }
          : undefined,
    },
    location: { kind: 'memory' },
    tokenPrice: 2n,
    cleanups: createCleanups(silent),
  })
}

describe('openGatewaySessions', () => {
  it('stops the start when CHANNEL_PACKAGE comes without CHANNEL_REGISTRY, naming both', async () => {
    await expect(open({ CHANNEL_PACKAGE: pkg })).rejects.toThrow(
      'CHANNEL_PACKAGE (channelPackage) and CHANNEL_REGISTRY (channelRegistry): set both or neither',
    )
  })

  it('offers none, and says why, when off, without a channel package, or without the payee’s key', async () => {
    expect(await open({ SESSIONS: 'false' }, { local: true })).toEqual({
      status: 'off',
      reason: 'SESSIONS=false',
    })
    expect(await open({})).toMatchObject({ status: 'off', reason: /no CHANNEL_PACKAGE/ })
    const other = new Ed25519Keypair().toSuiAddress()
    expect(await open({}, { local: true, payTo: other })).toMatchObject({
      status: 'off',
      reason: /OPERATOR_KEY must be the key of PAY_TO/,
    })
  })

  it('offers both methods on the local ledger’s package, the token price as given', async () => {
    const cleanups = createCleanups(silent)
    const sessions = await openGatewaySessions({
      config: loadConfig({ env: {} }),
      ledger: {
        operator,
        payTo: operator.toSuiAddress(),
        ledgerUrl: 'http://127.0.0.1:1',
        local: {
          url: 'http://127.0.0.1:1',
          modulesPackage: pkg,
          escrow: { config: pkg },
          channel: { registry: pkg },
        },
      },
      location: { kind: 'memory' },
      tokenPrice: 2n,
      cleanups,
    })
    try {
      expect(sessions).toMatchObject({ status: 'on', package: pkg, registry: pkg, tokenPrice: 2n })
      if (sessions.status !== 'on') throw new Error('unreachable')
      expect(sessions.perCall.unitType).toBe('request')
      expect(sessions.perToken.unitType).toBe('token')
    } finally {
      await cleanups.run()
    }
  })
})

describe('keylessTokenPrice', () => {
  it('is the highest output-token price of the keyless models, rounded up, at least 1', () => {
    const model = defaultModel('http://127.0.0.1:1')
    // 0.8 USDC per million output tokens: 0.8 base units a token, rounded up to 1.
    expect(keylessTokenPrice([model])).toBe(1n)
    const dear = { ...model, id: 'dear', pricing: { prompt: '1', completion: '2.5' } }
    expect(keylessTokenPrice([model, dear])).toBe(3n)
    expect(keylessTokenPrice([{ ...dear, keyless: false }])).toBe(1n)
  })
})
