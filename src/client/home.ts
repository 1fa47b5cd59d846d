/**
 * Where the buyer's local files live (wallet key, spending record, settings): the user's config
 * folder, `tollgate/` inside it. `TOLLGATE_HOME` overrides it.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { PaymentError } from '../errors.js'

/**
 * The folder of the buyer's files: `$TOLLGATE_HOME`, else `%APPDATA%\tollgate` on Windows, else
 * `$XDG_CONFIG_HOME/tollgate`, else `~/.config/tollgate`.
 *
 * @param env - The environment to read; default `process.env`.
 * @example
 * ```ts
 * join(tollgateHome(), 'spending.json')
 * ```
 */
export function tollgateHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TOLLGATE_HOME) return env.TOLLGATE_HOME
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'tollgate')
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'tollgate')
}

/**
 * Writes a file atomically: a temporary file beside it (mode `mode`, default 0600), then a rename,
 * so a reader or a crash never sees half a file. Creates the folder (0700) when missing.
 *
 * @throws {PaymentError} `invalid_config` when the folder cannot be created (see `createFolder`).
 */
export async function writeFileAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  await createFolder(dirname(file))
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    await writeFile(temporary, text, { mode, flag: 'wx' })
    await rename(temporary, file)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

/**
 * Creates `folder` (0700) and its missing parents one at a time, from the nearest one that exists:
 * a bounded number of steps, where `mkdir(…, { recursive: true })` never returns under a parent
 * that cannot hold folders (`/proc` on Node 20).
 *
 * @throws {PaymentError} `invalid_config` naming the folder and the cause (`ENOENT`, `EACCES`, …).
 */
async function createFolder(folder: string): Promise<void> {
  const missing: string[] = []
  for (let current = folder; ; current = dirname(current)) {
    try {
      await stat(current)
      break
    } catch {
      missing.unshift(current)
      if (dirname(current) === current) break
    }
  }
  for (const path of missing) {
    try {
      await mkdir(path, { mode: 0o700 })
    } catch (error) {
      // Another process made it first.
      if ((error as { code?: unknown }).code === 'EEXIST') continue
      throw new PaymentError(
        'invalid_config',
        `Cannot create the folder ${path} (${(error as Error).message}); choose a folder you can write (TOLLGATE_HOME for the config folder).`,
        { cause: error },
      )
    }
  }
}
