/**
 * Running `tollgate` as a user does, for the CLI's tests: `src/cli.ts` in a subprocess (bundled
 * once per test run: scripts/cliUnderTest.ts), colours off, with its own environment.
 */
import { execFile } from 'node:child_process'
import { cliArgs } from '../../scripts/cliUnderTest.js'

/** What a `tollgate` run left: its exit code and output. */
export type CliResult = { code: number; stdout: string; stderr: string }

/**
 * Runs `tollgate ...args` with `env` added to this process's environment (a variable set to
 * `undefined` is removed); never throws (a non-zero exit is a result). Killed after `timeoutMs`
 * (default 120 s), which then reads as code -1.
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 120_000,
): Promise<CliResult> {
  const merged: Record<string, string> = {}
  for (const [name, value] of Object.entries({ ...process.env, ...env })) {
    if (value !== undefined) merged[name] = value
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      cliArgs(...args),
      {
        env: { NO_COLOR: '1', FORCE_COLOR: '0', ...merged },
        timeout: timeoutMs,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/** The lines of `text` that are not blank. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '')
}
