/**
 * The package's public subpaths as the repository's own code imports them (`tollgate`,
 * `tollgate/express`, …), each mapped to its source file. One table — `compilerOptions.paths` in
 * tsconfig.json (kept plain JSON for that) — read by TypeScript and tsx as it is, by vitest as
 * aliases and by tsup as its entries; `package.json` `exports` must list the same subpaths
 * (scripts/subpaths.test.ts checks it).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The subpath → source file table, paths relative to the repository root (`src/index.ts`). */
export const subpaths: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(
    (
      JSON.parse(readFileSync(`${root}tsconfig.json`, 'utf8')) as {
        compilerOptions: { paths: Record<string, [string]> }
      }
    ).compilerOptions.paths,
  ).map(([name, [file]]) => [name, file.replace(/^\.\//, '')]),
)

/** The repository's root folder (ends with a `/`). */
export const repositoryRoot = root
