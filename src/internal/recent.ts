/**
 * A bounded map of recently computed answers (URLs, route matches, terms, keys): when it is full
 * the oldest entry makes room, and keys longer than a limit are not kept, so that clients sending
 * endless distinct or long values cannot grow it.
 *
 * @module
 */

/** A bounded map; see the module's description. */
export class Recent<K, V> {
  readonly #entries = new Map<K, V>()
  readonly #max: number
  readonly #maxKeyLength: number

  /**
   * @param max - entries kept at most.
   * @param maxKeyLength - string keys longer than this are not kept (default: no limit).
   */
  constructor(max: number, maxKeyLength = Number.POSITIVE_INFINITY) {
    this.#max = max
    this.#maxKeyLength = maxKeyLength
  }

  get(key: K): V | undefined {
    return this.#entries.get(key)
  }

  /** Keeps `value` under `key` (making room by dropping the oldest entry) and returns it. */
  remember(key: K, value: V): V {
    if (typeof key === 'string' && key.length > this.#maxKeyLength) return value
    if (this.#entries.size >= this.#max && !this.#entries.has(key)) {
      this.#entries.delete(this.#entries.keys().next().value as K)
    }
    this.#entries.set(key, value)
    return value
  }

  get size(): number {
    return this.#entries.size
  }
}
