import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { check, getFileInfo, resolveConfig } from 'prettier'
import { describe, expect, it } from 'vitest'
import { createMoveReader } from './moveParity.js'

// The same check as `npm run check:move`: prettier with @mysten/prettier-plugin-move, the options
// of move/.prettierrc.json, the files move/.prettierignore leaves out skipped.
const ignorePath = 'move/.prettierignore'
const misformatted = 'move/fixtures/misformatted/sources/receipt_anchor.move'

async function formatted(file: string): Promise<boolean> {
  const options = await resolveConfig(file)
  return check(readFileSync(file, 'utf8'), { ...options, filepath: file })
}

const moveFiles = readdirSync('move', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.move'))
  .map((f) => join('move', f))
  .sort()

describe('the Move sources', () => {
  it('are formatted with prettier and the Move plugin', async () => {
    const checked: string[] = []
    for (const file of moveFiles) {
      if ((await getFileInfo(file, { ignorePath })).ignored) continue
      checked.push(file)
      expect({ file, formatted: await formatted(file) }).toEqual({ file, formatted: true })
    }
    expect(checked).toContain('move/tollgate/sources/escrow.move')
    expect(checked).toContain('move/tollgate/tests/escrow_tests.move')
  })

  it('fail the check when a file is not formatted (the deliberate fixture)', async () => {
    // Valid Move, so it is the formatting that fails; skipped by the write and check scripts.
    const reader = await createMoveReader()
    expect(reader.readSource(readFileSync(misformatted, 'utf8')).functions).toHaveLength(1)
    expect((await getFileInfo(misformatted, { ignorePath })).ignored).toBe(true)
    expect(await formatted(misformatted)).toBe(false)
  })
})
