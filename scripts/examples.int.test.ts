/**
 * The examples a seller copies start as the guides say, and on a busy port say so in one line
 * (exit 2) instead of an `EADDRINUSE` stack trace.
 */
import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
let taken: Server
let port: number

beforeAll(async () => {
  taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  port = (taken.address() as { port: number }).port
})

afterAll(() => {
  taken?.close()
})

function example(name: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', `examples/${name}.ts`, '--once'],
      {
        cwd: root,
        env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
        timeout: 120_000,
      },
      (error, _stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
        resolve({ code, stderr })
      },
    )
  })
}

describe('the examples on a busy port', { timeout: 300_000 }, () => {
  it.each(['express', 'koa', 'hono'])(
    '%s says which port and what to do, in one line',
    async (name) => {
      const { code, stderr } = await example(name)
      expect(code, stderr).toBe(2)
      expect(stderr.trim()).toBe(
        `Port ${port} is already in use: stop what listens there, or run with another port (PORT=${port + 1} npx tsx examples/${name}.ts).`,
      )
    },
  )
})
