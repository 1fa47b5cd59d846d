import { describe, expect, it } from 'vitest'
import { apiReports, reportFileName, staleReports } from './apiReport.js'
import { subpaths } from './subpaths.js'

describe('the public API report (api/*.api.md)', () => {
  const reports = apiReports()

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
    for (const namespace of [
      'X402',
      'Mpp',
      'Challenge',
      'Settle',
      'Attestation',
      'Escrow',
      'Money',
    ])
      expect(root).toMatch(new RegExp(`^namespace ${namespace} \\{$`, 'm'))
    expect(root).toMatch(/^ {2}function parsePaymentRequired\(/m)
    expect(root).toMatch(/^function createPaywall\(/m)
    expect(root, 'engine internals stay out of the root').not.toMatch(/^function finishResponse\(/m)
  })
})
