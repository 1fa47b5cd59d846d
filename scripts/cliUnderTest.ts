/**
 * The `tollgate` CLI, and the other TypeScript programs the tests start as subprocesses (worker
 * fixtures), as the tests run them: each bundled once per test run with esbuild — the same source,
 * as one file whose packages resolve from the repository's `node_modules` — so a subprocess starts
 * in a tenth of a second instead of seconds of compiling through tsx. The CLI is bundled by the
 * test set-up ({@link buildCliBundle}); a worker fixture on first use ({@link testModule}).
 * Outside a test run (no bundle named), everything runs through tsx. The package check
 * (scripts/check-package.mjs) runs the packed tarball's own bin.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { buildSync } from 'esbuild'
import { repositoryRoot } from './subpaths.js'

/** The variable naming the CLI's bundle, set by the test set-up for every test process. */
const bundleVariable = 'TOLLGATE_TEST_CLI'

/** The CLI's source file. */
export const cliSource = join(repositoryRoot, 'src/cli.ts')

/**
 * Where bundles go: two folders below the root, as `src/cli/` is, so paths the code finds from its
 * own file (`../../dist/console/`) still lead to the root's.
 */
const folder = join(repositoryRoot, '.cache/test-cli')

/**
 * Bundles `source` into `outfile`: the package's dependencies stay outside, its own subpaths
 * (`tollgate/…`) resolve to their sources through tsconfig.json's `paths`.
 */
function bundle(source: string, outfile: string): void {
  const manifest = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string> | undefined
  >
  const packages = ['dependencies', 'peerDependencies', 'devDependencies', 'optionalDependencies']
    .flatMap((field) => Object.keys(manifest[field] ?? {}))
    .flatMap((name) => [name, `${name}/*`])
  mkdirSync(folder, { recursive: true })
  buildSync({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: packages,
    tsconfig: join(repositoryRoot, 'tsconfig.json'),
    logLevel: 'warning',
  })
}

/**
 * Bundles the CLI and names it in the environment (for every test process); returns how to remove
 * the bundles of the run — its own only: another test run in the same checkout keeps its bundles.
 */
export async function buildCliBundle(): Promise<() => Promise<void>> {
  const run = process.pid
  const outfile = join(folder, `cli-${run}.mjs`)
  // Every project of the run (unit, integration, types) sets up in this process: one bundle.
  if (process.env[bundleVariable] !== outfile) bundle(cliSource, outfile)
  process.env[bundleVariable] = outfile
  return async () => {
    delete process.env[bundleVariable]
    // The run's CLI (`cli-<run>.mjs`) and its workers (`<name>-<run>-<pid>.mjs`); not another run's
    // worker whose own process id happens to be this run's (`<name>-<other>-<run>.mjs`).
    const ours = new RegExp(`^(cli-${run}|.+-${run}-\\d+)\\.mjs$`)
    // Each project of the run sets up and tears down in this process: the first teardown may have
    // removed the folder already.
    const names = existsSync(folder) ? readdirSync(folder) : []
    for (const name of names) {
      if (ours.test(name)) rmSync(join(folder, name), { force: true })
    }
    try {
      rmdirSync(folder)
    } catch {
      // Another run's bundles are still there.
    }
  }
}

/** The run whose CLI bundle is named in the environment (the test set-up's process id). */
const runOf = (bundlePath: string) => /cli-(\d+)\.mjs$/.exec(bundlePath)?.[1] ?? 'run'

/** Whether this is a test run with bundles (the test set-up ran). */
const bundled = () => (process.env[bundleVariable] ?? '') !== ''

/**
 * The arguments after `node` that run `tollgate ...args`.
 *
 * @example
 * ```ts
 * execFile(process.execPath, cliArgs('wallet', 'address'), callback)
 * ```
 */
export function cliArgs(...args: string[]): string[] {
  return bundled()
    ? [process.env[bundleVariable] as string, ...args]
    : ['--import', 'tsx', cliSource, ...args]
}

/** The module and `execArgv` that `fork` runs the CLI with. */
export function cliModule(): { file: string; execArgv: string[] } {
  return bundled()
    ? { file: process.env[bundleVariable] as string, execArgv: [] }
    : { file: cliSource, execArgv: ['--import', 'tsx'] }
}

/** The worker fixtures this process has bundled, by source. */
const workers = new Map<string, string>()

/**
 * The module and `execArgv` that run the TypeScript program `source` (a worker fixture) in a
 * subprocess: its bundle, made on first use in this process.
 *
 * @example
 * ```ts
 * const { file, execArgv } = testModule(workerPath)
 * const child = fork(file, [], { execArgv })
 * ```
 */
export function testModule(source: string): { file: string; execArgv: string[] } {
  if (!bundled()) return { file: source, execArgv: ['--import', 'tsx'] }
  let file = workers.get(source)
  if (file === undefined) {
    const run = runOf(process.env[bundleVariable] as string)
    file = join(folder, `${basename(source, '.ts')}-${run}-${process.pid}.mjs`)
    bundle(source, file)
    workers.set(source, file)
  }
  return { file, execArgv: [] }
}
