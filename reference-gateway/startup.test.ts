import type { PaymentStore } from 'tollgate'
import { describe, expect, it } from 'vitest'
import { configProblems, loadConfig } from './config.js'
import { checkStoreReachable } from './startup.js'

describe('checkStoreReachable', () => {
  it('fails the start with one invalid_config problem naming the setting when the store hangs', async () => {
    const config = loadConfig({ env: {} })
    const hanging = { counts: () => new Promise(() => {}) } as unknown as PaymentStore
    let thrown: unknown
    try {
      await checkStoreReachable(hanging, 'sqlite', config, 50)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toMatchObject({ name: 'PaymentError', code: 'invalid_config' })
    const problems = configProblems(thrown)
    expect(problems).toHaveLength(1)
    expect(problems?.[0]).toMatch(
      /^DATA_DIR \(dataDir\): cannot use the SQLite store in .+: no answer within 0\.05 s \(timeout\)$/,
    )
  })
})
