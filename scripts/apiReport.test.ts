import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { unexportedReferences } from './apiReachability.js'
import { apiProgram, apiReports, publicHoles, reportFileName, staleReports } from './apiReport.js'
import { subpaths } from './subpaths.js'

describe('the public API report (api/*.api.md)', () => {
  const program = apiProgram()
  const reports = apiReports(program)

  it('has one report per public subpath', () => {
    expect([...reports.keys()].sort()).toEqual(Object.keys(subpaths).map(reportFileName).sort())
  })

  it('matches the code: an API change comes with `npm run api:report` and its reviewed diff', () => {
    expect(staleReports(reports), 'reports that differ from the code').toEqual([])
  })

  it('notices a changed, a missing and a stale report', () => {
    const changed = new Map(reports)
    const root = reportFileName('tollgate')
    changed.set(root, `${changed.get(root)}\nfunction added(): void`)
    changed.set('tollgate-new.api.md', 'new subpath')
    changed.delete(reportFileName('tollgate/client'))
    expect(staleReports(changed)).toEqual(
      [root, 'tollgate-new.api.md', reportFileName('tollgate/client')].sort(),
    )
  })

  it('names every namespace of the root and the members of each', () => {
    const root = reports.get(reportFileName('tollgate')) ?? ''
    for (const namespace of ['X402', 'Mpp', 'Challenge', 'Settle', 'Attestation', 'Escrow'])
      expect(root).toMatch(new RegExp(`^namespace ${namespace} \\{$`, 'm'))
    expect(root).toMatch(/^ {2}function parsePaymentRequired\(/m)
    expect(root).toMatch(/^function createPaywall\(/m)
    expect(root, 'engine internals stay out of the root').not.toMatch(/^function finishResponse\(/m)
  })

  it('gives each name one path: no name is both flat and a namespace member', () => {
    const root = reports.get(reportFileName('tollgate')) ?? ''
    const flat = new Set(
      [...root.matchAll(/^(?:function|const|type|class) (\w+)/gm)].map((m) => m[1]),
    )
    const members = [...root.matchAll(/^ {2}(?:function|const|type|class) (\w+)/gm)].map(
      (m) => m[1],
    )
    expect(members.filter((name) => flat.has(name))).toEqual([])
    expect(root).toMatch(/^class PaymentError \{$/m)
    expect(root).toMatch(/^function formatAmount\(/m)
  })

  it('names every type the public API refers to', () => {
    expect(publicHoles(program).map((h) => `${h.exported} → ${h.refersTo}`)).toEqual([])
  })

  it('notices a public name that refers to a type no entry exports', () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-api-'))
    try {
      const entry = join(folder, 'index.ts')
      writeFileSync(
        join(folder, 'verdict.ts'),
        'export type Verdict = { ok: boolean }\nexport type Shown = { ok: boolean }\n',
      )
      writeFileSync(
        entry,
        [
          "import type { Shown, Verdict } from './verdict.js'",
          "export type { Shown } from './verdict.js'",
          'export function check(): Verdict { return { ok: true } }',
          'export function shown(): Shown { return { ok: true } }',
          'type Inner = { n: number }',
          'export const inferred = () => ({ n: 1 }) as Inner',
          '',
        ].join('\n'),
      )
      const program = ts.createProgram([entry], { strict: true, noEmit: true })
      const holes = unexportedReferences(program, [entry], folder)
      expect(holes.map((h) => `${h.exported} → ${h.refersTo} (${h.declaredIn})`)).toEqual([
        'check → Verdict (verdict.ts)',
        'inferred → Inner (index.ts)',
      ])
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
