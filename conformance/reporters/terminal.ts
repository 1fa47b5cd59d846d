/**
 * Live terminal progress: one line per check as it ends (status, gate, id, timing, message), the
 * hint under a failure, and a summary. Writes through a `write` function (no `console`).
 *
 * @module
 */
import pc from 'picocolors'
import type { CheckResult, ConformanceReport } from '../report.js'
import type { ProgressEvent } from '../run.js'

const marks: Record<CheckResult['status'], (s: string) => string> = {
  pass: (s) => pc.green(s),
  fail: (s) => pc.red(s),
  skip: (s) => pc.dim(s),
  error: (s) => pc.yellow(s),
}

/** One line for a finished check. */
export function formatCheckLine(result: CheckResult): string {
  const label = result.status.toUpperCase().padEnd(5)
  const gate = result.gate === 'protocol' ? '   ' : `(${result.gate})`
  const time = pc.dim(`${result.durationMs} ms`.padStart(8))
  let line = `${marks[result.status](label)} ${gate} ${result.id.padEnd(28)} ${time}  ${result.message}`
  if (result.hint !== '') line += `\n${' '.repeat(16)}${pc.cyan('fix:')} ${result.hint}`
  return line
}

/**
 * A progress listener for `runConformance({ onProgress })` that prints each check as it ends.
 *
 * @example
 * ```ts
 * await runConformance({ url, onProgress: terminalProgress((line) => process.stderr.write(line)) })
 * ```
 */
export function terminalProgress(write: (text: string) => void): (event: ProgressEvent) => void {
  return (event) => {
    if (event.type === 'end') write(`${formatCheckLine(event.result)}\n`)
    // Paid checks pay on the ledger and can wait: say when each starts and what it waits for.
    else if (event.type === 'start' && event.mode === 'paid') {
      write(`${pc.dim('…    ')}     ${event.id.padEnd(28)} ${pc.dim(event.title)}\n`)
    } else if (event.type === 'progress') {
      write(`${pc.dim('…    ')}     ${event.id.padEnd(28)} ${pc.dim(event.message)}\n`)
    }
  }
}

/** The closing summary of a report. */
export function formatSummary(report: ConformanceReport): string {
  const g = report.gates
  const gate = (name: 'a' | 'b' | 'c' | 'd') => `${name}:${marks[g[name]](g[name])}`
  const verdict = report.listable ? pc.green(pc.bold('LISTABLE')) : pc.red(pc.bold('NOT LISTABLE'))
  return [
    '',
    `${verdict}  gates ${gate('a')} ${gate('b')} ${gate('c')} ${gate('d')}`,
    `${report.summary.pass} passed, ${report.summary.fail} failed, ${report.summary.skip} skipped, ${report.summary.error} errors in ${report.durationMs} ms (${report.mode})`,
    '',
  ].join('\n')
}
