/**
 * Group commit per channel, for the PostgreSQL channel store. Every write to a channel locks its
 * row until its transaction's commit has reached the disk, so the calls in flight on one channel
 * queue on that row one WAL flush at a time — the flush rate bounds the calls/s of a channel. Here
 * a write to a channel runs at once when none is running on it; those that arrive meanwhile wait,
 * and then run together: in order, in ONE transaction on one connection, with one flush. Each sees
 * the effects of the ones before it, as if they had committed one by one. Writes to different
 * channels never share a transaction (so no two transactions lock rows in different orders).
 *
 * Writes next to each other in a batch that say they can be merged (the same `merge.key`: units
 * of one price spent on the channel) run as one statement, which answers each as if it had run
 * alone in turn.
 *
 * A batch that fails (the connection lost, the server gone) fails every write in it, as each would
 * have failed alone; none is tried again (a unit spent may have been committed).
 *
 * @module
 */
import type pg from 'pg'

/** One statement and its parameters. */
export type Statement = {
  readonly text: string
  readonly values: readonly unknown[]
  /** How a run of such statements next to each other in a batch runs as one. */
  readonly merge?: Merge | undefined
}

/** How statements of one kind run as one (see the module's description). */
export type Merge = {
  /** Statements with the same key next to each other in a batch are merged. */
  readonly key: string
  /** The one statement that does the work of `count` of them. */
  statement(count: number): Statement
  /** Each merged statement's rows, in order, from the rows of the one. */
  split(rows: Record<string, unknown>[], count: number): Record<string, unknown>[][]
}

type Waiting = Statement & {
  readonly resolve: (rows: Record<string, unknown>[]) => void
  readonly reject: (error: unknown) => void
}

const names = new Map<string, string>()

/**
 * A statement as a named (prepared) query: PostgreSQL parses and plans it once per connection
 * instead of at every call (about half of a voucher's time, on its five-part statement). The name
 * is derived from the text, so that two copies of this module sharing a pool agree on it.
 */
export function prepared(statement: Statement): pg.QueryConfig {
  let name = names.get(statement.text)
  if (name === undefined) {
    name = `tollgate_${fingerprint(statement.text)}`
    names.set(statement.text, name)
  }
  return { name, text: statement.text, values: statement.values as unknown[] }
}

/**
 * Sends a transaction's statements. A connection made with `pipeline: true` gets them all at once,
 * in one round trip: after a failed one the rest fail as well, and the COMMIT rolls back
 * (PostgreSQL answers it `ROLLBACK`). Any other gets each when the one before it is answered, and
 * a ROLLBACK instead of the rest after a failure.
 */
async function send(
  client: pg.PoolClient,
  statements: (string | pg.QueryConfig)[],
): Promise<PromiseSettledResult<pg.QueryResult>[]> {
  if ((client as { pipeline?: boolean }).pipeline === true) {
    // Corked, the statements leave in one write (one system call) instead of one or more each: a
    // pipelined connection sends each as it is given, and node-postgres corks only a statement's own
    // messages. A connection without a socket to cork sends them one by one, as before.
    const socket = (client as { connection?: { stream?: Partial<Corkable> } }).connection?.stream
    const corkable = typeof socket?.cork === 'function' && typeof socket.uncork === 'function'
    if (corkable) socket.cork?.()
    try {
      return Promise.allSettled(statements.map((statement) => client.query(statement)))
    } finally {
      if (corkable) socket.uncork?.()
    }
  }
  const settled: PromiseSettledResult<pg.QueryResult>[] = []
  for (const statement of statements) {
    try {
      settled.push({ status: 'fulfilled', value: await client.query(statement) })
    } catch (reason) {
      settled.push({ status: 'rejected', reason })
      await client.query('ROLLBACK').catch(() => undefined)
      break
    }
  }
  return settled
}

/** A socket's buffering of writes (Node's `Writable`). */
type Corkable = { cork(): void; uncork(): void }

type Run = { statement: Statement; items: Waiting[]; merge?: Merge | undefined }

/** A batch's statements, the runs of mergeable ones next to each other as one. */
function mergedRuns(items: Waiting[]): Run[] {
  const runs: Run[] = []
  for (const item of items) {
    const last = runs.at(-1)
    if (item.merge !== undefined && last?.merge?.key === item.merge.key) last.items.push(item)
    else runs.push({ statement: item, items: [item], merge: item.merge })
  }
  for (const run of runs) {
    if (run.items.length === 1) run.merge = undefined
    else if (run.merge !== undefined) run.statement = run.merge.statement(run.items.length)
  }
  return runs
}

/**
 * Two FNV-1a hashes of a text (64 bits, and 64 more over it reversed), in hex: the same in every
 * copy of the module, without a Node module (the core bundles for Web-standard runtimes).
 */
function fingerprint(text: string): string {
  const prime = 0x100000001b3n
  const mask = (1n << 64n) - 1n
  let forward = 0xcbf29ce484222325n
  let backward = 0xcbf29ce484222325n
  for (let i = 0; i < text.length; i++) {
    forward = ((forward ^ BigInt(text.charCodeAt(i))) * prime) & mask
    backward = ((backward ^ BigInt(text.charCodeAt(text.length - 1 - i))) * prime) & mask
  }
  return forward.toString(16).padStart(16, '0') + backward.toString(16).padStart(16, '0')
}

/** Runs a channel's writes; see the module's description. */
export type ChannelBatches = (
  channelId: string,
  statement: Statement,
) => Promise<Record<string, unknown>[]>

/**
 * Creates the batches of a store over `pool`.
 *
 * @example
 * ```ts
 * const write = createChannelBatches(pool)
 * const rows = await write(channelId, { text: 'UPDATE …', values: [channelId] })
 * ```
 */
export function createChannelBatches(pool: Pick<pg.Pool, 'query' | 'connect'>): ChannelBatches {
  /** Per channel with writes running: the ones waiting for the next batch. */
  const queues = new Map<string, Waiting[]>()

  /** Answers each write of a run from the run's rows (a merged run's split among its writes). */
  function answer(run: Run, rows: Record<string, unknown>[]): void {
    // A run of more than one was merged (only statements with a `merge` are put together).
    const each = run.merge === undefined ? [rows] : run.merge.split(rows, run.items.length)
    for (const [j, item] of run.items.entries()) item.resolve(each[j] ?? [])
  }

  async function runBatch(items: Waiting[]): Promise<void> {
    const runs = mergedRuns(items)
    const [only] = runs
    if (runs.length === 1 && only !== undefined) {
      // One statement (a write alone, or a run merged into one) is a transaction of its own: no
      // BEGIN, no COMMIT, no borrowed connection.
      try {
        answer(only, (await pool.query(prepared(only.statement))).rows)
      } catch (error) {
        for (const item of items) item.reject(error)
      }
      return
    }
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      for (const item of items) item.reject(error)
      return
    }
    const statements = ['BEGIN', ...runs.map((run) => prepared(run.statement)), 'COMMIT']
    const settled = await send(client, statements)
    const failed = settled.find((result) => result.status === 'rejected')
    const commit = settled.at(-1)
    if (
      failed !== undefined ||
      commit?.status !== 'fulfilled' ||
      commit.value.command !== 'COMMIT'
    ) {
      const error =
        failed?.status === 'rejected' ? failed.reason : new Error('The batch was rolled back.')
      // The connection may be broken: the pool closes it rather than lend it again.
      client.release(error instanceof Error ? error : true)
      for (const item of items) item.reject(error)
      return
    }
    client.release()
    for (const [i, run] of runs.entries()) {
      answer(run, (settled[i + 1] as PromiseFulfilledResult<pg.QueryResult>).value.rows)
    }
  }

  async function drain(channelId: string, first: Waiting): Promise<void> {
    await runBatch([first])
    for (;;) {
      const waiting = queues.get(channelId) ?? []
      if (waiting.length === 0) {
        queues.delete(channelId)
        return
      }
      queues.set(channelId, [])
      await runBatch(waiting)
    }
  }

  return (channelId, statement) =>
    new Promise((resolve, reject) => {
      const item: Waiting = { ...statement, resolve, reject }
      const waiting = queues.get(channelId)
      if (waiting !== undefined) {
        waiting.push(item)
        return
      }
      queues.set(channelId, [])
      void drain(channelId, item)
    })
}
