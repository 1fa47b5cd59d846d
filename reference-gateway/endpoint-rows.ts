/**
 * Rows of the gateway's table-driven endpoint suite (`gateway.int.test.ts`) for the services
 * beyond the spec's table. Test support only.
 *
 * @module
 */
import { rowsResendToNews } from './endpoint-rows-a.js'
import { rowsDeeplToTinify } from './endpoint-rows-b.js'
import type { Expectation, RowContext } from './endpoint-rows-kit.js'

export type { Expectation } from './endpoint-rows-kit.js'

/** The rows of the 59 endpoints beyond the spec's table, by gateway path. */
export function moreExpectations(context: RowContext): Record<string, Expectation> {
  return { ...rowsResendToNews(context), ...rowsDeeplToTinify(context) }
}
