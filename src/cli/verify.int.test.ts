/**
 * `tollgate verify`, run as a process (tsx) against the gateway's embedded default (its confidential
 * model served by the simulated enclave): a streamed confidential answer verifies, every step ✓,
 * exit 0; one byte changed in the stored receipt, or in the stored hash of the relayed bytes, makes
 * it fail at the step that checks it, exit 1; so does one byte of the gateway's own receipt (JWS).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server.js'

const cli = fileURLToPath(new URL('../cli.ts', import.meta.url))
const folder = mkdtempSync(join(tmpdir(), 'tollgate-verify-'))
const model = 'confidential/llama-3.3-70b'
let gateway: RunningGateway
let receiptId: string

beforeAll(async () => {
  gateway = await startGateway({
    config: parseConfig({ port: 0, dataDir: folder, emulatorLatencyMs: 0, logLevel: 'silent' }),
  })
  const { key } = await gateway.inference.keys.create({ credit: 10_000n })
  const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
  })
  expect((await answer.text()).endsWith('data: [DONE]\n\n')).toBe(true)
  receiptId = answer.headers.get('x-receipt-id') ?? ''
  // Anchored now rather than on the worker's next round.
  const anchor = await fetch(`${gateway.url}/v1/aci/anchor/${receiptId}`, { method: 'POST' })
  expect(anchor.status).toBe(200)
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** Runs the CLI; answers its exit code and output (colours stripped). */
function verify(...args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', cli, 'verify', ...args, '--inference-url', gateway.url],
      (error, stdout) => {
        // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes.
        const plain = stdout.replace(/\u001b\[[0-9;]*m/g, '')
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout: plain })
      },
    )
  })
}

/** Changes the stored receipt row with `change`, runs `check`, then puts it back. */
async function tampered(
  column: 'receipt' | 'response_hash' | 'gateway_receipt' | 'digest',
  change: (value: string) => string,
  check: () => Promise<void>,
) {
  const db = new Database(join(folder, 'gateway.db'))
  const [table, key] = column === 'digest' ? ['aci_anchors', 'receipt_id'] : ['aci_receipts', 'id']
  const { value } = db
    .prepare(`SELECT ${column} AS value FROM ${table} WHERE ${key} = ?`)
    .get(receiptId) as { value: string }
  db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`).run(change(value), receiptId)
  try {
    await check()
  } finally {
    db.prepare(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`).run(value, receiptId)
    db.close()
  }
}

/** One hex digit of `text` after `marker` changed (one byte). */
const flipAfter = (text: string, marker: string) => {
  const at = text.indexOf(marker) + marker.length
  return `${text.slice(0, at)}${text[at] === '0' ? '1' : '0'}${text.slice(at + 1)}`
}

describe('tollgate verify', { timeout: 60_000 }, () => {
  it('verifies a streamed confidential answer step by step (exit 0)', async () => {
    const { code, stdout } = await verify(receiptId)
    expect(code).toBe(0)
    for (const step of [
      '✓ receipt fetched',
      '✓ attested session fetched',
      '✓ attestation report verified',
      '✓ receipt names the attested workload',
      '✓ signed by an attested key',
      '✓ request hash matches',
      '✓ response hash matches',
      '✓ gateway receipt binds the payment to this answer: 0.004000 USDC debited from key_',
      '✓ ledger anchor event matches the receipt',
    ]) {
      expect(stdout).toContain(step)
    }
    expect(stdout).toContain('Verified.')
    const json = await verify(receiptId, '--json')
    expect(json.code).toBe(0)
    const result = JSON.parse(json.stdout) as { status: string; steps: { status: string }[] }
    expect(result.status).toBe('verified')
    expect(result.steps.every((s) => s.status === 'passed')).toBe(true)
  })

  it('fails at the signature when one byte of the stored receipt changed (exit 1)', async () => {
    await tampered(
      'receipt',
      (text) => flipAfter(text, '"chat_id":"chatcmpl-'),
      async () => {
        const { code, stdout } = await verify(receiptId)
        expect(code).toBe(1)
        expect(stdout).toContain('✓ receipt names the attested workload')
        expect(stdout).toMatch(/✗ signed by an attested key.*\[signature_invalid\]/)
        expect(stdout).toContain('NOT verified.')
      },
    )
  })

  it('fails at the response hash when the stored hash of the relayed bytes changed', async () => {
    await tampered(
      'response_hash',
      (hash) => flipAfter(hash, 'sha256:'),
      async () => {
        const { code, stdout } = await verify(receiptId, '--json')
        expect(code).toBe(1)
        const result = JSON.parse(stdout) as {
          steps: { step: string; status: string; code?: string }[]
        }
        expect(result.steps.find((s) => s.status === 'failed')).toMatchObject({
          step: 'response_hash',
          code: 'response_hash_mismatch',
        })
      },
    )
  })

  it('fails at the gateway receipt when one byte of its signature changed', async () => {
    await tampered(
      'gateway_receipt',
      (jws) => {
        const at = jws.lastIndexOf('.') + 5
        return `${jws.slice(0, at)}${jws[at] === 'A' ? 'B' : 'A'}${jws.slice(at + 1)}`
      },
      async () => {
        const { code, stdout } = await verify(receiptId)
        expect(code).toBe(1)
        expect(stdout).toContain('✓ response hash matches')
        expect(stdout).toMatch(/✗ gateway receipt.*\[gateway_signature_invalid\]/)
      },
    )
  })

  it('fails at the anchor when one character of the anchor digest changed', async () => {
    await tampered(
      'digest',
      (digest) => `${digest.slice(0, -1)}${digest.endsWith('2') ? '3' : '2'}`,
      async () => {
        const { code, stdout } = await verify(receiptId)
        expect(code).toBe(1)
        expect(stdout).toContain('✓ gateway receipt binds the payment')
        expect(stdout).toMatch(/✗ ledger anchor event matches the receipt.*\[anchor_not_found\]/)
      },
    )
  })

  it('fails when the pinned measurement is not the one attested, and for an unknown receipt', async () => {
    const pinned = await verify(receiptId, '--measurement', 'ab'.repeat(48), '--json')
    expect(pinned.code).toBe(1)
    expect(JSON.parse(pinned.stdout).steps[2]).toMatchObject({
      step: 'attestation_valid',
      status: 'failed',
      code: 'measurement_not_allowed',
    })
    const unknown = await verify('rcpt_unknown')
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toMatch(/✗ receipt fetched/)
  })
})
