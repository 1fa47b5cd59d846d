/**
 * `tollgate keys create --owner`: the key belongs to that Sui address (normalised), which `keys
 * list` shows and the gateway's console uses; anything but an address is refused before the store
 * is opened.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type CliResult, runCli } from './testHelpers.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-keys-cli-'))

afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** A user's environment: its own data folder (SQLite), no PostgreSQL. */
function keys(args: string[]): Promise<CliResult> {
  return runCli(['keys', ...args], {
    TOLLGATE_HOME: join(folder, 'home'),
    DATA_DIR: join(folder, 'data'),
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
  })
}

describe('tollgate keys create --owner', () => {
  it('assigns the owner, normalised, and keys list shows it', async () => {
    const created = await keys(['create', '--name', 'console', '--owner', '0xB0B', '--json'])
    expect(created.code).toBe(0)
    const owner = `0x${'0'.repeat(61)}b0b`
    const json = JSON.parse(created.stdout) as { id: string; owner: string }
    expect(json.owner).toBe(owner)
    const listed = await keys(['list'])
    expect(listed.stdout).toContain(`${json.id}  `)
    expect(listed.stdout).toContain(`owner ${owner}`)
  })

  it('refuses an owner that is not a Sui address', async () => {
    const refused = await keys(['create', '--owner', 'alice'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("option '--owner <address>' argument 'alice' is invalid")
    expect(refused.stderr).toContain('must be a Sui address')
  })
})
