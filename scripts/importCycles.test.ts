/**
 * No import cycle in the engine: no module under `src/engine/` imports, directly or through other
 * modules, one that imports it back — type-only imports and re-exports included. The engine's types
 * live in `src/engine/types.ts` and `src/engine/sellerTypes.ts` so that every engine module can
 * import them without a way back.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { repositoryRoot } from './subpaths.js'

/** The library's source files (tests left out), as paths relative to the repository. */
function sourceFiles(folder: string): string[] {
  return readdirSync(join(repositoryRoot, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(file))
    .map((file) => join(folder, file))
}

/** Each file's relative imports (static, dynamic, type-only and re-exports), as repository paths. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const text = readFileSync(join(repositoryRoot, file), 'utf8')
    const { importedFiles } = ts.preProcessFile(text, true, true)
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) =>
        relative(repositoryRoot, resolve(repositoryRoot, dirname(file), name)).replace(
          /\.js$/,
          '.ts',
        ),
      )
      .filter((target) => known.has(target))
    graph.set(file, targets)
  }
  return graph
}

/** The cycles of a graph: its strongly connected components of more than one node, or a self-loop. */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const visit = (node: string) => {
    index.set(node, counter)
    low.set(node, counter)
    counter++
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) {
        cycles.push(component.sort())
      }
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return cycles
}

describe('import cycles', () => {
  it('finds a cycle, through several modules or type-only imports, and nothing in a tree', () => {
    const files = {
      'a.ts': "import { b } from './b.js'\n",
      'b.ts': "import type { C } from './c.js'\nexport const b = 1\n",
      'c.ts': "export type { A } from './a.js'\n",
      'd.ts': "import { b } from './b.js'\n",
    }
    const graph = new Map(
      Object.entries(files).map(([file, text]) => [
        file,
        ts
          .preProcessFile(text, true, true)
          .importedFiles.map((i) => i.fileName.slice(2, -3) + '.ts'),
      ]),
    )
    expect(importCycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']])
    graph.set('c.ts', [])
    expect(importCycles(graph)).toEqual([])
  })

  it('has none that goes through src/engine/', () => {
    const graph = importGraph(sourceFiles('src'))
    expect(
      [...graph.keys()].filter((file) => file.startsWith('src/engine/')).length,
    ).toBeGreaterThan(8)
    const throughEngine = importCycles(graph).filter((cycle) =>
      cycle.some((file) => file.startsWith('src/engine/')),
    )
    expect(throughEngine).toEqual([])
  })
})
