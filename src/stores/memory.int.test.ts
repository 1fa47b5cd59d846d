import { describePaymentStoreContract } from './contract.js'
import { createMemoryStore, createMemoryStoreData } from './memory.js'

describePaymentStoreContract('memory', () => {
  const data = createMemoryStoreData()
  return {
    open: (options) => createMemoryStore({ ...options, data }),
    cleanup: async () => data.rows.clear(),
  }
})
