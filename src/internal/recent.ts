/**
 * A bounded map of recently computed answers (URLs, route matches, terms, keys): when it is full
 * the oldest entry makes room, and keys longer than a limit are not kept, so that clients sending
 * endless distinct or long values cannot grow it.
 *
 * @module
 */

/** A bounded map; see the module's description. */
export type Recent<K, V> = {
  get(key: K): V | undefined
  /** Keeps `value` under `key` (making room by dropping the oldest entry) and returns it. */
  remember(key: K, value: V): V
  /** How many entries are kept. */
  readonly size: number
}

/** Options of {@link createRecent}. */
export type RecentOptions = {
  /** Entries kept at most. */
  max: number
  /** String keys longer than this are not kept. Default: no limit. */
  maxKeyLength?: number
}

/** Creates an empty {@link Recent} map. */
export function createRecent<K, V>(options: RecentOptions): Recent<K, V> {
  const { max, maxKeyLength = Number.POSITIVE_INFINITY } = options
  const entries = new Map<K, V>()
  return {
    get: (key) => entries.get(key),
    remember(key, value) {
      if (typeof key === 'string' && key.length > maxKeyLength) return value
      if (entries.size >= max && !entries.has(key)) {
        entries.delete(entries.keys().next().value as K)
      }
      entries.set(key, value)
      return value
    },
    get size() {
      return entries.size
    },
  }
}
