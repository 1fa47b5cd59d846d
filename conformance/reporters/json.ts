/**
 * JSON output of a report: the report itself, checked against its schema on the way out (so what
 * is written always matches the published `conformance/report.schema.json`).
 *
 * @module
 */
import { type ConformanceReport, reportSchema } from '../report.js'

/**
 * Serialises the report as JSON (2-space indented).
 *
 * @throws {Error} if the report does not match its schema (a bug in the suite).
 * @example
 * ```ts
 * process.stdout.write(toJson(report))
 * ```
 */
export function toJson(report: ConformanceReport): string {
  return `${JSON.stringify(reportSchema.parse(report), null, 2)}\n`
}
