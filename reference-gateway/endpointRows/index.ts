/**
 * Rows of the gateway's table-driven endpoint suite (`gateway.int.test.ts`) for the services
 * beyond the seed's first table, one file per service family as the catalog groups them. Test
 * support only.
 *
 * @module
 */
import { dataRows } from './data.js'
import type { Expectation, RowContext } from './kit.js'
import { mediaRows } from './media.js'
import { toolsRows } from './tools.js'

export type { Expectation } from './kit.js'

/** The rows of the 59 endpoints beyond the seed's first table, by gateway path. */
export function moreExpectations(context: RowContext): Record<string, Expectation> {
  return { ...dataRows(context), ...mediaRows(context), ...toolsRows(context) }
}
