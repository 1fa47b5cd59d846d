/**
 * The `tollgate` CLI as the tests run it, in a subprocess: `src/cli.ts` bundled once per test run
 * with esbuild (by the test set-up, {@link buildCliBundle}) — the same source, as one file whose
 * packages resolve from the repository's `node_modules`, so each run starts in a tenth of a second
 * instead of seconds of compiling through tsx. Outside a test run (no bundle), `src/cli.ts` runs
 * through tsx. The package check (scripts/check-package.mjs) runs the packed tarball's own bin.
 */
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { repositoryRoot } from './subpaths.js'

/** The variable naming the bundle, set by the test set-up for every test process. */
const bundleVariable = 'TOLLGATE_TEST_CLI'

/** The CLI's source file. */
export const cliSource = join(repositoryRoot, 'src/cli.ts')

/**
 * The arguments after `node` that run `tollgate ...args`.
 *
 * @example
 * ```ts
 * execFile(process.execPath, cliArgs('wallet', 'address'), callback)
 * ```
 */
export function cliArgs(...args: string[]): string[] {
  const bundle = process.env[bundleVariable]
  return bundle === undefined || bundle === ''
    ? ['--import', 'tsx', cliSource, ...args]
    : [bundle, ...args]
}

/**
 * Bundles `src/cli.ts` into `.cache/test-cli/` (two folders below the root, as `src/cli/` is, so
 * paths the code finds from its own file still lead to the root's `dist/`) and names it in the
 * environment; returns how to remove it. The package's dependencies stay outside the bundle, and
 * its own subpaths (`tollgate/…`) resolve to their sources through tsconfig.json's `paths`.
 */
export async function buildCliBundle(): Promise<() => Promise<void>> {
  const { build } = await import('esbuild')
  const { readFileSync } = await import('node:fs')
  const manifest = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string> | undefined
  >
  const packages = ['dependencies', 'peerDependencies', 'devDependencies', 'optionalDependencies']
    .flatMap((field) => Object.keys(manifest[field] ?? {}))
    .flatMap((name) => [name, `${name}/*`])
  const folder = join(repositoryRoot, '.cache/test-cli')
  await mkdir(folder, { recursive: true })
  const outfile = join(folder, `cli-${process.pid}.mjs`)
  await build({
    entryPoints: [cliSource],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: packages,
    tsconfig: join(repositoryRoot, 'tsconfig.json'),
    logLevel: 'warning',
  })
  process.env[bundleVariable] = outfile
  return async () => {
    delete process.env[bundleVariable]
    await rm(outfile, { force: true })
  }
}

/**
 * The module and `execArgv` that `fork` runs the CLI with.
 *
 * @example
 * ```ts
 * const { file, execArgv } = cliModule()
 * const child = fork(file, ['gateway', '--port', '0'], { execArgv })
 * ```
 */
export function cliModule(): { file: string; execArgv: string[] } {
  const [first, second, third] = cliArgs()
  return first === '--import'
    ? { file: third ?? cliSource, execArgv: [first, second ?? 'tsx'] }
    : { file: first ?? cliSource, execArgv: [] }
}
