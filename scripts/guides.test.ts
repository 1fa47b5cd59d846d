/**
 * The guides say what the code does: the Node version everywhere is the one `engines` states, and
 * the examples the guides run exist where the guides say they are (the repository, not the package).
 * And what the repository cites is in the repository: no comment or guide sends its reader to a
 * document outside it (the steering documents' sections or folder); docs/ states the rules.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import pkg from '../package.json' with { type: 'json' }

const root = new URL('..', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')
const guides = [
  'README.md',
  ...readdirSync(new URL('docs/', root))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]

describe('the guides and the code agree', () => {
  it('state the Node version of engines, and no older one as supported', () => {
    const floor = /^>=(\d+)$/.exec(pkg.engines.node)?.[1]
    expect(floor).toBe('22')
    expect(read('README.md')).toContain(`Node.js ≥ ${floor}`)
    for (const guide of guides) {
      // Benchmarks record the Node version they were measured on; that is history, not support.
      if (guide === 'docs/benchmarks.md') continue
      expect(read(guide), guide).not.toMatch(/(runs?|supports?|CI)[^.\n]* on Node 20\b/)
    }
  })

  it('run examples that exist, and say the package does not ship them', () => {
    const sellers = read('docs/sellers.md')
    const named = [...sellers.matchAll(/npx tsx (examples\/[\w-]+\.ts)/g)].map((m) => m[1])
    expect(named.length).toBeGreaterThan(0)
    for (const file of named) expect(existsSync(new URL(file as string, root)), file).toBe(true)
    expect(sellers).toContain('not in the npm package')
    expect(pkg.files).not.toContain('examples')
  })

  it('cite no document outside the repository', () => {
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter(
        (f) => /\.(ts|mts|md)$/.test(f) && f !== 'CHANGELOG.md' && existsSync(new URL(f, root)),
      )
    expect(tracked.length).toBeGreaterThan(100)
    const outside = /PROTOCOLS\.md|\.\.\/shared\/|\bspec §?\d+(\.\d+)?\b|\(spec \d/
    const found = tracked.flatMap((f) =>
      read(f)
        .split('\n')
        .flatMap((line, i) => (outside.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    )
    expect(found).toEqual([])
  })
})
