/**
 * The CLI's one ledger rule (docs/buyers.md): `--ledger` / `TOLLGATE_LEDGER`, else the ledger
 * recorded in `settings.json`, else the network's public node; the recorded local ledger's ids
 * apply only to the URL they were recorded for (the local ledger reports the mainnet chain id, so
 * its URL is all that tells it apart).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resolveLedger } from './wallet.js'
import { loadSettings, recordLocalLedger } from './walletFiles.js'

const local = {
  url: 'http://127.0.0.1:9123',
  chainId: '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
  usdcType: '0xdba3::usdc::USDC',
  modulesPackage: `0x${'70'.repeat(32)}`,
  escrowConfig: `0x${'c0'.repeat(32)}`,
}
let saved: string | undefined

beforeEach(() => {
  saved = process.env.TOLLGATE_HOME
  process.env.TOLLGATE_HOME = join(mkdtempSync(join(tmpdir(), 'tollgate-rule-')), 'tollgate')
})
afterEach(() => {
  if (saved === undefined) delete process.env.TOLLGATE_HOME
  else process.env.TOLLGATE_HOME = saved
})

describe('which ledger a command uses', () => {
  it('with nothing recorded: the public node of the network', async () => {
    expect(await resolveLedger(undefined, 'sui:mainnet')).toEqual({
      url: 'https://fullnode.mainnet.sui.io:443',
      source: 'network',
      local: undefined,
    })
  })

  it('once a local ledger is recorded: that ledger and its ids, before the network', async () => {
    await recordLocalLedger(local)
    expect(await loadSettings()).toMatchObject({ ledger: local.url, localLedger: local })
    expect(await resolveLedger(undefined, 'sui:mainnet')).toEqual({
      url: local.url,
      source: 'settings',
      local,
    })
  })

  it('--ledger first; the recorded ids only for the URL they belong to', async () => {
    await recordLocalLedger(local)
    expect(await resolveLedger('http://127.0.0.1:9123/', 'sui:mainnet')).toMatchObject({
      source: 'option',
      local,
    })
    expect(await resolveLedger('http://127.0.0.1:5555', 'sui:mainnet')).toEqual({
      url: 'http://127.0.0.1:5555',
      source: 'option',
      local: undefined,
    })
  })
})
