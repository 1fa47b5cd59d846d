/**
 * The keyset cursor of `GET /v1/services`: where the next page starts, as an opaque token
 * (base64url JSON). Either a position among the gateway's own items (cheap as an offset: there are
 * few), or after a listing — its creation time and id in the newest-first order — so that a page
 * deep in the catalog costs what the first one does, through the index `(state, created_at, id)`,
 * where an `offset` walks every row before it.
 *
 * @module
 */
import { z } from 'zod'
import type { ListingPosition } from './store.js'

/** A decoded cursor. */
export type CatalogCursor = { own: number } | { after: ListingPosition }

const wireSchema = z.union([
  z.object({ o: z.number().int().min(0).max(100_000) }).strict(),
  z
    .object({
      t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      i: z.string().regex(/^lst_[0-9a-f]{24}$/),
    })
    .strict(),
])

/** The token of `cursor`. */
export function encodeCursor(cursor: CatalogCursor): string {
  const wire =
    'own' in cursor ? { o: cursor.own } : { t: cursor.after.createdAt, i: cursor.after.id }
  return Buffer.from(JSON.stringify(wire), 'utf8').toString('base64url')
}

/** A `cursor` query parameter: a token of {@link encodeCursor}, at most 200 characters. */
export const cursorSchema = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_-]+$/)
  .transform((token, ctx): CatalogCursor => {
    let wire: unknown
    try {
      wire = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
    } catch {
      wire = undefined
    }
    const parsed = wireSchema.safeParse(wire)
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: 'not a cursor of this catalog' })
      return z.NEVER
    }
    return 'o' in parsed.data
      ? { own: parsed.data.o }
      : { after: { createdAt: parsed.data.t, id: parsed.data.i } }
  })
