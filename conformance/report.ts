/**
 * The conformance report: its zod schema is the single source of truth for the JSON output (the
 * published `conformance/report.schema.json` is generated from it).
 *
 * @module
 */
import { z } from 'zod'

/** The four listing gates (docs/conformance.md), and `protocol` for the seller duties beyond them. */
export const gateSchema = z.enum(['a', 'b', 'c', 'd', 'protocol'])

/** A gate, or `protocol`. */
export type Gate = z.infer<typeof gateSchema>

/** How a check ended. `error`: it could not be judged (network, ledger, missing input). */
export const checkStatusSchema = z.enum(['pass', 'fail', 'skip', 'error'])

/** How a check ended. */
export type CheckStatus = z.infer<typeof checkStatusSchema>

/** One HTTP exchange, redacted: payment headers are shortened, keys never appear. */
export const exchangeSchema = z.object({
  request: z.object({
    method: z.string(),
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    body: z.string().optional(),
  }),
  response: z
    .object({
      status: z.number().int(),
      headers: z.record(z.string(), z.string()),
      body: z.string().optional(),
    })
    .optional(),
  error: z.string().optional(),
  durationMs: z.number(),
})

/** One HTTP exchange, redacted. */
export type Exchange = z.infer<typeof exchangeSchema>

/** One check's outcome. */
export const checkResultSchema = z.object({
  /** Stable id, e.g. `gate.live-402` or `paid.replay`. */
  id: z.string(),
  gate: gateSchema,
  title: z.string(),
  status: checkStatusSchema,
  /** What was observed (one sentence). */
  message: z.string(),
  /** How to fix a failure (empty when passing). */
  hint: z.string(),
  /** The requests sent and the responses seen, redacted. */
  evidence: z.array(exchangeSchema),
  /** Other facts (addresses, amounts as strings). */
  details: z.record(z.string(), z.unknown()).optional(),
  durationMs: z.number(),
})

/** One check's outcome. */
export type CheckResult = z.infer<typeof checkResultSchema>

/** The whole report. */
export const reportSchema = z.object({
  /** Report format version. */
  version: z.literal(1),
  url: z.string(),
  method: z.string(),
  mode: z.enum(['read-only', 'paid']),
  network: z.string(),
  /** The registered wallet the challenges were judged against, if known. */
  wallet: z.string().nullable(),
  startedAt: z.string(),
  durationMs: z.number(),
  /** Each gate's verdict: pass only when its check passed. */
  gates: z.object({
    a: checkStatusSchema,
    b: checkStatusSchema,
    c: checkStatusSchema,
    d: checkStatusSchema,
  }),
  /** True when the four gates pass (the listing would be accepted). */
  listable: z.boolean(),
  summary: z.object({
    pass: z.number().int(),
    fail: z.number().int(),
    skip: z.number().int(),
    error: z.number().int(),
  }),
  checks: z.array(checkResultSchema),
})

/** The whole report. */
export type ConformanceReport = z.infer<typeof reportSchema>

/**
 * The JSON Schema of the report (draft 2020-12), as published in `conformance/report.schema.json`.
 *
 * @example
 * ```ts
 * writeFileSync('report.schema.json', JSON.stringify(reportJsonSchema(), null, 2))
 * ```
 */
export function reportJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://tollgate.dev/schemas/conformance-report.json',
    title: 'Tollgate conformance report',
    ...(z.toJSONSchema(reportSchema) as Record<string, unknown>),
  }
}
