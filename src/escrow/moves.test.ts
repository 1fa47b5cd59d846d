import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { buildFund, buildSetFee } from './moves.js'

const pkg = normalizeSuiAddress('0x70116a7e')
const config = normalizeSuiAddress('0xc0')
const coin = (id: string, balance: string) => ({
  objectId: normalizeSuiAddress(id),
  version: '1',
  digest: '11111111111111111111111111111111',
  balance,
})

/** A network where the config was shared by the publish transaction, at version 42. */
const client = {
  core: {
    getReferenceGasPrice: async () => ({ referenceGasPrice: '1000' }),
    listCoins: async ({ coinType }: { coinType: string }) => ({
      objects: coinType.endsWith('::sui::SUI')
        ? [coin('0xa1', '1000000000')]
        : [coin('0xb1', '5000')],
    }),
    getObject: async () => ({
      object: {
        objectId: config,
        owner: { $kind: 'Shared', Shared: { initialSharedVersion: '42' } },
        type: `${pkg}::escrow::EscrowConfig`,
        json: { id: config, fee_bps: '500', treasury: normalizeSuiAddress('0x7ea5') },
      },
    }),
  },
} as unknown as ClientWithCoreApi

function configVersionIn(tx: Transaction): string | undefined {
  const shared = tx
    .getData()
    .inputs.map((input) => input.Object?.SharedObject)
    .find((ref) => ref && normalizeSuiAddress(ref.objectId) === config)
  return shared ? String(shared.initialSharedVersion) : undefined
}

describe('the escrow builders on a published package', () => {
  const options = { client, package: pkg, sender: normalizeSuiAddress('0xbeef') }

  it('name the config with the initial shared version the ledger reports', async () => {
    const fund = await buildFund({
      ...options,
      terms: {
        package: pkg,
        config,
        seller: normalizeSuiAddress('0x5e'),
        amount: '1000',
        asset: `${normalizeSuiAddress('0xdc')}::usdc::USDC`,
        feeBps: 500,
        deliverByMs: 1_700_000_000_000,
        reviewMs: 3_600_000,
        terms: '07'.repeat(32),
      },
    })
    expect(configVersionIn(fund)).toBe('42')
    const setFee = await buildSetFee({
      ...options,
      adminCap: {
        objectId: normalizeSuiAddress('0xcab'),
        version: '1',
        digest: coin('0x1', '0').digest,
      },
      config,
      feeBps: 250,
    })
    expect(configVersionIn(setFee)).toBe('42')
  })
})
