import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

// Runs scripts/move.mjs with a PATH that has no `sui`, or a stub `sui` that records its calls.
const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function run(path: string) {
  return spawnSync(process.execPath, ['scripts/move.mjs'], {
    env: { ...process.env, PATH: path },
    encoding: 'utf8',
  })
}

describe('npm run move', () => {
  it('says it skipped the Move build and tests when there is no sui CLI', () => {
    const empty = mkdtempSync(join(tmpdir(), 'no-sui-'))
    dirs.push(empty)
    const result = run(empty)
    expect(result.status).toBe(0)
    expect(result.stdout).toMatch(/^skipped: no sui CLI \(not built or tested: move\/tollgate\)$/m)
  })

  it('runs sui move build then sui move test in each package, and fails with the CLI', () => {
    const bin = mkdtempSync(join(tmpdir(), 'stub-sui-'))
    dirs.push(bin)
    const log = join(bin, 'calls.log')
    const sui = join(bin, 'sui')
    // The stub fails `move test` when FAIL_TEST is set.
    writeFileSync(
      sui,
      `#!/bin/sh\necho "$* in $(basename "$PWD")" >> "${log}"\nif [ "$2" = test ] && [ -n "$FAIL_TEST" ]; then exit 3; fi\n`,
    )
    chmodSync(sui, 0o755)
    const path = `${bin}:${execFileSync('sh', ['-c', 'dirname "$(command -v sh)"'], { encoding: 'utf8' }).trim()}`
    const ok = run(path)
    expect(ok.status).toBe(0)
    expect(readFileSync(log, 'utf8')).toBe('move build in tollgate\nmove test in tollgate\n')
    expect(ok.stdout).toMatch(/^ok: sui move build and test passed for move\/tollgate$/m)

    const failed = spawnSync(process.execPath, ['scripts/move.mjs'], {
      env: { ...process.env, PATH: path, FAIL_TEST: '1' },
      encoding: 'utf8',
    })
    expect(failed.status).toBe(3)
    expect(failed.stdout).toMatch(/^failed: sui move test in move\/tollgate$/m)
  })
})
