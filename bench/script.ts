/**
 * Starts one of the benchmarks' helper scripts (ledger, servers, stubs) in its own Node process
 * under tsx and reads the JSON line it prints first.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { build } from 'tsup'

/**
 * Runs `script` (a file URL) with `env` added; `ipc` opens an IPC channel; `wrapper` runs it under
 * another command (`['valgrind', '--tool=callgrind', …]`); `nodeFlags` go to Node. Rejects if the process
 * exits before printing its line. `BENCH_PROFILE=<part of a script's path>` runs the matching
 * scripts under `--cpu-prof` (profiles in `.data/profiles/`, written when the process exits).
 */
export async function startScript<T>(
  script: URL,
  env: Record<string, string> = {},
  ipc = false,
  wrapper: string[] = [],
  nodeFlags: string[] = [],
): Promise<{ process: ChildProcess; info: T }> {
  const profile = process.env.BENCH_PROFILE
  const profiling =
    profile !== undefined && profile !== '' && script.pathname.includes(profile)
      ? ['--cpu-prof', '--cpu-prof-dir=.data/profiles']
      : []
  const node = [process.execPath, ...nodeFlags, ...profiling, '--import', 'tsx', script.pathname]
  const [command, ...args] = [...wrapper, ...node]
  const child = spawn(command as string, args, {
    stdio: ['pipe', 'pipe', 'inherit', ...(ipc ? (['ipc'] as const) : [])],
    env: { ...process.env, ...env },
  })
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script.pathname} exited with ${code}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', resolve)
  })
  return { process: child, info: JSON.parse(line) as T }
}

/**
 * Bundles `script` (a file URL) into a new folder under the project's `.data/` (so that the bundle
 * resolves the packages from its `node_modules`), for a process that should not also run the
 * TypeScript loader (under valgrind). Answers the folder and the bundle's path.
 */
export async function bundleScript(
  script: URL,
  prefix: string,
): Promise<{ folder: string; bundle: string }> {
  const dataFolder = new URL('../.data/', import.meta.url).pathname
  mkdirSync(dataFolder, { recursive: true })
  const folder = mkdtempSync(join(dataFolder, prefix))
  await build({
    entry: { main: script.pathname },
    outDir: folder,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    skipNodeModulesBundle: true,
    silent: true,
    config: false,
  })
  const file = readdirSync(folder).find((name) => /^main\.m?js$/.test(name)) as string
  return { folder, bundle: join(folder, file) }
}
