/**
 * The reporters on a real report (a local seller probed read-only): the JSON matches the published
 * schema, the JUnit XML is well-formed with one testcase per check, and the terminal lines name
 * every check.
 */
import { readFileSync } from 'node:fs'
import { stripVTControlCharacters } from 'node:util'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { brokenSellers, type RunningSeller, startSeller } from './fixtures/sellers.js'
import { type ConformanceReport, reportJsonSchema } from './report.js'
import { toJson } from './reporters/json.js'
import { escapeXml, toJUnit } from './reporters/junit.js'
import { formatCheckLine } from './reporters/terminal.js'
import { runConformance } from './run.js'
import { checkWellFormedXml } from './testHelpers.js'

const published = JSON.parse(
  readFileSync(new URL('./report.schema.json', import.meta.url), 'utf8'),
) as Record<string, unknown>
const env = {
  ledgerUrl: 'http://127.0.0.1:9', // read-only runs never reach the ledger
  wallet: new Ed25519Keypair().toSuiAddress(),
  stranger: new Ed25519Keypair().toSuiAddress(),
}
let good: RunningSeller
let broken: RunningSeller
let reports: ConformanceReport[]

beforeAll(async () => {
  good = await startSeller(env)
  const noCache = brokenSellers.find((f) => f.name.startsWith('no Cache-Control'))
  broken = await (noCache as NonNullable<typeof noCache>).start(env)
  reports = []
  for (const url of [good.url, broken.url, 'http://127.0.0.1:1/nothing-listens']) {
    reports.push(
      await runConformance({ url, walletAddress: env.wallet, allowPrivateNetwork: true }),
    )
  }
})

afterAll(async () => {
  await Promise.all([good?.close(), broken?.close()])
})

describe('JSON reporter', () => {
  it('publishes the schema generated from the report schema', () => {
    expect(published).toEqual(reportJsonSchema())
  })

  it('writes reports that validate against the published schema', () => {
    const validate = new Ajv2020({ strict: true }).compile(published)
    for (const report of reports) {
      const ok = validate(JSON.parse(toJson(report)))
      expect(validate.errors ?? []).toEqual([])
      expect(ok).toBe(true)
    }
    const broken = { ...JSON.parse(toJson(reports[0] as ConformanceReport)), listable: 'yes' }
    expect(validate(broken)).toBe(false)
  })

  it('never carries a full payment header', async () => {
    const text = toJson(reports[0] as ConformanceReport)
    expect(text).not.toContain('bm90LWEtcGF5bWVudA%%%')
    expect(text).toContain('[redacted')
  })
})

describe('JUnit reporter', () => {
  it('writes well-formed XML with one testcase per check', () => {
    for (const report of reports) {
      const xml = toJUnit(report)
      const elements = checkWellFormedXml(xml)
      expect(elements.filter((e) => e === 'testcase')).toHaveLength(report.checks.length)
      expect(elements.filter((e) => e === 'failure')).toHaveLength(report.summary.fail)
      expect(elements.filter((e) => e === 'skipped')).toHaveLength(report.summary.skip)
      expect(elements.filter((e) => e === 'error')).toHaveLength(report.summary.error)
    }
    expect(toJUnit(reports[1] as ConformanceReport)).toMatch(
      /<testcase classname="conformance.protocol" name="http.no-store: [^"]*" time="[0-9.]+">\n\s*<failure /,
    )
  })

  it('stays well-formed whatever a seller puts in its answers', () => {
    const base = reports[1] as ConformanceReport
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
        const [first, ...rest] = base.checks
        const report = {
          ...base,
          url: `http://x/${text}`,
          checks: [
            {
              ...(first as (typeof base.checks)[0]),
              status: 'fail' as const,
              message: text,
              hint: text,
            },
            ...rest,
          ],
        }
        checkWellFormedXml(toJUnit(report))
        expect(escapeXml(text)).not.toMatch(/[<>"]/)
      }),
      { numRuns: 60 },
    )
  })

  it('the well-formedness check itself rejects broken XML', () => {
    for (const bad of [
      '<a><b></a></b>',
      '<a>&nbsp;</a>',
      '<a x="1" x="2"/>',
      '<a/><b/>',
      '<a>\u0001</a>',
      '<a x=1/>',
      '<a>',
    ]) {
      expect(() => checkWellFormedXml(bad), bad).toThrow()
    }
    expect(checkWellFormedXml('<?xml version="1.0"?><a x="&amp;"><b/>t&#10;</a>')).toEqual([
      'a',
      'b',
    ])
  })
})

describe('terminal reporter', () => {
  it('prints one line per check with its status, id and time', () => {
    const report = reports[1] as ConformanceReport
    const lines = report.checks.map(formatCheckLine)
    expect(lines.join('\n')).toContain('http.no-store')
    for (const [i, line] of lines.entries()) {
      expect(stripVTControlCharacters(line)).toMatch(
        new RegExp(
          `^${report.checks[i]?.status.toUpperCase()}\\s.*${report.checks[i]?.id.replace('.', '\\.')}\\s+\\d+ ms`,
        ),
      )
    }
  })

  it('reports an unreachable seller as an error of gate b, not a failure', () => {
    const report = reports[2] as ConformanceReport
    expect(report.gates.b).toBe('error')
    expect(report.checks.find((c) => c.id === 'gate.live-402')?.hint).not.toBe('')
  })
})
