/**
 * The `@example` blocks of the TSDoc import what exists: every `import { … } from '<subpath>'` in
 * an example names a public subpath and only names that subpath exports (read from the compiled
 * program, as the API report reads them). An example a user copies must not fail at its first line.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { apiProgram } from './apiReport.js'
import { repositoryRoot, subpaths } from './subpaths.js'

/** The import statements of the `@example` blocks of a source text, with their line. */
function exampleImports(text: string): { line: number; names: string[]; from: string }[] {
  const found: { line: number; names: string[]; from: string }[] = []
  const lines = text.split('\n')
  let inExample = false
  lines.forEach((raw, index) => {
    const line = raw.replace(/^\s*\*\s?/, '')
    if (/@example/.test(line)) inExample = true
    else if (/^@\w+/.test(line) || /\*\//.test(raw)) inExample = false
    if (!inExample) return
    const match = /^import\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/.exec(line)
    if (!match) return
    const names = (match[2] ?? '')
      .split(',')
      .map(
        (n) =>
          n
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0] ?? '',
      )
      .filter((n) => n !== '')
    found.push({ line: index + 1, names, from: match[3] ?? '' })
  })
  return found
}

describe('the @example blocks', () => {
  it('finds the imports of an example, and only of examples', () => {
    const text = [
      "import { real } from 'tollgate'",
      '/**',
      ' * Does it.',
      ' *',
      ' * @example',
      ' * ```ts',
      " * import { a, type B, c as d } from 'tollgate/client'",
      ' * a()',
      ' * ```',
      ' * @param x - not an example',
      " * import { notCounted } from 'tollgate'",
      ' */',
    ].join('\n')
    expect(exampleImports(text)).toEqual([
      { line: 7, names: ['a', 'B', 'c'], from: 'tollgate/client' },
    ])
  })

  it('import only names their subpath exports', () => {
    const program = apiProgram()
    const checker = program.getTypeChecker()
    const exportsOf = new Map<string, Set<string>>()
    for (const [subpath, file] of Object.entries(subpaths)) {
      const source = program.getSourceFile(join(repositoryRoot, file))
      const module = source && checker.getSymbolAtLocation(source)
      exportsOf.set(
        subpath,
        new Set(module ? checker.getExportsOfModule(module).map((s) => s.name) : []),
      )
    }
    const wrong: string[] = []
    let seen = 0
    for (const source of program.getSourceFiles()) {
      const file = source.fileName
      if (file.includes('node_modules') || !file.startsWith(repositoryRoot)) continue
      for (const found of exampleImports(readFileSync(file, 'utf8'))) {
        if (!found.from.startsWith('tollgate')) continue
        seen++
        const names = exportsOf.get(found.from)
        const where = `${file.slice(repositoryRoot.length)}:${found.line}`
        if (names === undefined) wrong.push(`${where}: no subpath ${found.from}`)
        else
          for (const name of found.names)
            if (!names.has(name)) wrong.push(`${where}: ${found.from} exports no ${name}`)
      }
    }
    expect(seen).toBeGreaterThan(5)
    expect(wrong).toEqual([])
  })
})
