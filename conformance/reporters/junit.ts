/**
 * JUnit XML of a report: one `testsuite`, one `testcase` per check (`classname` = gate), failures
 * as `<failure>`, errors as `<error>`, skips as `<skipped>`; the evidence (already redacted) goes in
 * `system-out`.
 *
 * @module
 */
import type { ConformanceReport } from '../report.js'

/** Escapes text for XML content and attribute values; drops characters XML 1.0 cannot hold. */
export function escapeXml(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
      .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&apos;')
  )
}

/**
 * Renders the report as JUnit XML.
 *
 * @example
 * ```ts
 * writeFileSync('conformance.xml', toJUnit(report))
 * ```
 */
export function toJUnit(report: ConformanceReport): string {
  const e = escapeXml
  const seconds = (ms: number) => (ms / 1000).toFixed(3)
  const cases = report.checks.map((check) => {
    const name = `${check.id}: ${check.title}`
    const open = `    <testcase classname="${e(`conformance.${check.gate === 'protocol' ? 'protocol' : `gate-${check.gate}`}`)}" name="${e(name)}" time="${seconds(check.durationMs)}">`
    const lines = [open]
    if (check.status === 'fail') {
      lines.push(
        `      <failure message="${e(check.message)}" type="fail">${e(check.hint)}</failure>`,
      )
    } else if (check.status === 'error') {
      lines.push(`      <error message="${e(check.message)}" type="error">${e(check.hint)}</error>`)
    } else if (check.status === 'skip') {
      lines.push(`      <skipped message="${e(check.message)}"/>`)
    }
    if (check.evidence.length > 0 || check.status === 'pass') {
      lines.push(
        `      <system-out>${e([check.message, ...check.evidence.map((x) => JSON.stringify(x))].join('\n'))}</system-out>`,
      )
    }
    lines.push('    </testcase>')
    return lines.join('\n')
  })
  const s = report.summary
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="tollgate conformance" tests="${report.checks.length}" failures="${s.fail}" errors="${s.error}" skipped="${s.skip}" time="${seconds(report.durationMs)}">`,
    `  <testsuite name="${e(`${report.method} ${report.url}`)}" tests="${report.checks.length}" failures="${s.fail}" errors="${s.error}" skipped="${s.skip}" time="${seconds(report.durationMs)}" timestamp="${e(report.startedAt)}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n')
}
