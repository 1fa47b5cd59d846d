import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repositoryRoot, subpaths } from './subpaths.js'

const pkg = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>
}

describe('the public subpaths', () => {
  it('are the same in package.json exports and in the tsconfig.json paths that tsup, vitest and tsx read', () => {
    const exported = Object.keys(pkg.exports)
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? 'tollgate' : `tollgate/${key.slice(2)}`))
      .sort()
    expect(Object.keys(subpaths).sort()).toEqual(exported)
  })

  it('each map to a source file that exists', () => {
    for (const file of Object.values(subpaths))
      expect(existsSync(join(repositoryRoot, file))).toBe(true)
  })
})
