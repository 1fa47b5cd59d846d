/**
 * The statuses whose answer has no body (Fetch's "null body status", plus 103): a `Response` built
 * with a body for one of them throws.
 *
 * @module
 * @internal
 */
const nullBodyStatuses = new Set([101, 103, 204, 205, 304])

/** Whether an answer with `status` must be built with a `null` body. */
export function isNullBodyStatus(status: number): boolean {
  return nullBodyStatuses.has(status)
}
