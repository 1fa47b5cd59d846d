/**
 * A small JSON file of records kept with the wallet (the spending record, the channel book):
 * `{ "version": 1, "<key>": [ … ] }`, checked against its schema when read, written atomically
 * (owner-only) through {@link writeFileAtomic}, and every read and change serialised within the
 * process. A missing file is no records; an unreadable one refuses every use (`invalid_config`)
 * rather than starting from nothing.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import type { z } from 'zod'
import { PaymentError } from '../errors.js'
import { writeFileAtomic } from './home.js'

/** Options of {@link createRecordFile}. */
export type RecordFileOptions<K extends string, T> = {
  file: string
  /** The schema of the whole file. */
  schema: z.ZodType<{ version: 1 } & { [P in K]: T[] }>
  /** The field that holds the records. */
  key: K
  /** What an unreadable file means to the user (the error's message). */
  unreadable: string
  /**
   * Reads the file once and keeps what was read and written: for a file one process owns. Default
   * `false`: the file is read again before each use, so processes sharing it see each other's
   * changes (without a cross-process lock).
   */
  cache?: boolean | undefined
  /** Drops records that need not be kept, before each write (default: none). */
  prune?: ((records: T[]) => T[]) | undefined
}

/** A file of records; see the module's description. */
export type RecordFile<T> = {
  readonly file: string
  /** The records (a copy). */
  read(): Promise<T[]>
  /**
   * Reads the records, writes those `change` returns, and returns its result; nothing is written
   * when `change` throws or returns no `records`.
   */
  update<R>(change: (records: T[]) => { records?: T[] | undefined; result: R }): Promise<R>
}

/**
 * Opens a file of records.
 *
 * @example
 * ```ts
 * const spends = createRecordFile({ file, schema, key: 'spends', unreadable: 'Cannot read.' })
 * await spends.update((records) => ({ records: [...records, spend], result: undefined }))
 * ```
 */
export function createRecordFile<K extends string, T>(
  options: RecordFileOptions<K, T>,
): RecordFile<T> {
  const { file, schema, key, prune } = options
  let queue: Promise<unknown> = Promise.resolve()
  let cached: T[] | undefined

  function locked<R>(task: () => Promise<R>): Promise<R> {
    const run = queue.then(task, task)
    queue = run.catch(() => undefined)
    return run
  }

  async function load(): Promise<T[]> {
    if (cached !== undefined) return [...cached]
    let text: string | undefined
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable(error)
    }
    let records: T[] = []
    try {
      if (text !== undefined) records = schema.parse(JSON.parse(text))[key]
    } catch (error) {
      throw unreadable(error)
    }
    if (options.cache) cached = records
    return [...records]
  }

  function unreadable(cause: unknown): PaymentError {
    return new PaymentError('invalid_config', options.unreadable, { details: { file }, cause })
  }

  async function save(records: T[]): Promise<void> {
    const kept = prune ? prune(records) : records
    await writeFileAtomic(file, `${JSON.stringify({ version: 1, [key]: kept }, null, 1)}\n`)
    if (options.cache) cached = kept
  }

  return {
    file,
    read: () => locked(load),
    update: (change) =>
      locked(async () => {
        const { records, result } = change(await load())
        if (records !== undefined) await save(records)
        return result
      }),
  }
}
