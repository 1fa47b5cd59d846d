import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { lookUpAgent } from './agent.js'

const agent = normalizeSuiAddress('0xa6')

function clientOwning(records: { objectId: string; json: unknown }[]) {
  return {
    core: { listOwnedObjects: async () => ({ objects: records }) },
  } as unknown as ClientWithCoreApi
}

const record = (id: string, name: string, at: string) => ({
  objectId: normalizeSuiAddress(id),
  json: { id: normalizeSuiAddress(id), agent, name, metadata_uri: '', registered_at_ms: at },
})

describe('lookUpAgent', () => {
  it('takes the newest record of an agent that registered twice (a real network keeps both)', async () => {
    const found = await lookUpAgent(
      clientOwning([record('0x1', 'old', '1000'), record('0x2', 'new', '2000')]),
      { address: agent },
    )
    expect(found).toMatchObject({
      status: 'found',
      record: { objectId: normalizeSuiAddress('0x2'), name: 'new' },
    })
    const reversed = await lookUpAgent(
      clientOwning([record('0x2', 'new', '2000'), record('0x1', 'old', '1000')]),
      { address: agent },
    )
    expect(reversed).toMatchObject({ status: 'found', record: { name: 'new' } })
  })

  it('says a record without the registry fields is invalid, and no record is not found', async () => {
    expect(
      await lookUpAgent(clientOwning([{ objectId: '0x1', json: { name: 1 } }]), { address: agent }),
    ).toMatchObject({ status: 'invalid' })
    expect(await lookUpAgent(clientOwning([]), { address: agent })).toEqual({ status: 'not_found' })
  })
})
