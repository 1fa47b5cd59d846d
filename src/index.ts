export * from './errors.js'
export * from './money.js'
export * from './stores/memory.js'
export * from './stores/types.js'
