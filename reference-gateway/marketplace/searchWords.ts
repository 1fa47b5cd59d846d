/**
 * How catalog search reads words, the same for the gateway's own endpoints, SQLite's full-text
 * index and PostgreSQL's: a text's words are its runs of letters and digits, lower-cased (after
 * NFKC), at most 64 characters each; accents are kept and nothing is stemmed. A query matches when
 * each of its words (up to 8) begins a word of the listing's name, description, tags or URL —
 * `weath` finds "weather", `eather` does not.
 *
 * @module
 */

/** The most words of a query that are read. */
export const maxQueryWords = 8

const longestWord = 64

/** The words of `text`; see the module's description. */
export function wordsOf(text: string): string[] {
  const words: string[] = []
  for (const word of text
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)) {
    if (word !== '') words.push(word.slice(0, longestWord))
  }
  return words
}

/** The searchable text of a listing (stored beside it and indexed): its distinct words. */
export function searchTextOf(listing: {
  readonly name: string
  readonly description: string
  readonly tags: readonly string[]
  readonly url: string
}): string {
  const words = new Set(
    [listing.name, listing.description, ...listing.tags, listing.url].flatMap(wordsOf),
  )
  return [...words].join(' ')
}

/** Whether every query word begins some word of `words`. */
export function matchesWords(words: readonly string[], query: readonly string[]): boolean {
  return query.every((q) => words.some((word) => word.startsWith(q)))
}
