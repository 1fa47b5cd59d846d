/**
 * Where the buyer's local files live (wallet key, spending record, settings): the user's config
 * folder, `tollgate/` inside it. `TOLLGATE_HOME` overrides it.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

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
 */
export async function writeFileAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    await writeFile(temporary, text, { mode, flag: 'wx' })
    await rename(temporary, file)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}
