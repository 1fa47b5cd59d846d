/**
 * Starts one of the benchmarks' helper scripts (ledger, servers, stubs) in its own Node process
 * under tsx and reads the JSON line it prints first.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/**
 * Runs `script` (a file URL) with `env` added; `ipc` opens an IPC channel. Rejects if the process
 * exits before printing its line.
 */
export async function startScript<T>(
  script: URL,
  env: Record<string, string> = {},
  ipc = false,
): Promise<{ process: ChildProcess; info: T }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script.pathname], {
    stdio: ['pipe', 'pipe', 'inherit', ...(ipc ? (['ipc'] as const) : [])],
    env: { ...process.env, ...env },
  })
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script.pathname} exited with ${code}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', resolve)
  })
  return { process: child, info: JSON.parse(line) as T }
}
