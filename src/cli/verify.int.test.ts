/**
 * `tollgate verify`, run as a process (tsx) against the gateway's embedded default (its confidential
 * model served by the simulated enclave): a streamed confidential answer verifies, every step ✓,
 * exit 0; one byte changed in the stored receipt, or in the stored hash of the relayed bytes, makes
 * it fail at the step that checks it, exit 1, with no "What this does not prove" (no verdict to
 * qualify); so does one byte of the gateway's own receipt (JWS). The simulated enclave's test root
 * fails without `--allow-test-root`; `--payment`/`--response` of another buyer fail, the buyer's own
 * verify. Right after an answer (anchor pending) it waits, with a progress line, and then says
 * verified; `--no-wait` exits 3. Usage errors exit 2 (exit codes: docs/buyers.md).
 */
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { cliArgs } from '../../scripts/cliUnderTest.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-verify-'))
const model = 'confidential/llama-3.3-70b'
const gateway = useTestGateway({
  config: {
    // The anchor worker runs only when asked (POST /v1/aci/anchor/{id}): a test decides when.
    refundIntervalMs: 3_600_000,
  },
})
let receiptId: string
let keyId: string
let callId: string
/** The file holding the bytes the buyer received. */
const received = join(folder, 'answer.sse')

/** A streamed confidential answer on a fresh key, not anchored yet. */
async function answer(
  content = 'Hi',
): Promise<{ id: string; keyId: string; callId: string; text: string }> {
  const created = await gateway.inference.keys.create({ credit: 10_000n })
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content }] }),
  })
  const text = await response.text()
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
  const callId = response.headers.get('x-call-id') ?? ''
  return { id: response.headers.get('x-receipt-id') ?? '', keyId: created.id, callId, text }
}

beforeAll(async () => {
  const first = await answer()
  receiptId = first.id
  keyId = first.keyId
  callId = first.callId
  writeFileSync(received, first.text)
  const anchor = await fetch(`${gateway.url}/v1/aci/anchor/${receiptId}`, { method: 'POST' })
  expect(anchor.status).toBe(200)
}, 60_000)

afterAll(async () => {
  rmSync(folder, { recursive: true, force: true })
})

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes.
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '')

/** Runs `tollgate verify` as is; answers its exit code and output (colours stripped). */
function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      cliArgs('verify', ...args, '--inference-url', gateway.url),
      (error, stdout, stderr) => {
        const code = error === null ? 0 : Number(error.code ?? 1)
        resolve({ code, stdout: plain(stdout), stderr: plain(stderr) })
      },
    )
  })
}

/** `tollgate verify … --allow-test-root`: the simulated enclave's quote chains to a test root. */
const verify = (...args: string[]) => run(...args, '--allow-test-root')

/** Changes the stored receipt row with `change`, runs `check`, then puts it back. */
async function tampered(
  column: 'receipt' | 'response_hash' | 'gateway_receipt' | 'digest',
  change: (value: string) => string,
  check: () => Promise<void>,
) {
  const db = new Database(join(gateway.dataDir, 'gateway.db'))
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
      // What the call reserved: its prompt's estimate (9 tokens) at 1.2 USDC per million and the
      // model's 4096 output tokens at 1.6 per million, rounded up.
      '✓ gateway receipt binds the payment to this answer: 0.006565 USDC debited from key_',
      '✓ ledger anchor event matches the receipt',
    ]) {
      expect(stdout).toContain(step)
    }
    expect(stdout).toContain('Verified.')
    expect(stdout).toContain('What this does not prove:')
    // Not bound to a payment or bytes: the verdict says so.
    expect(stdout).toMatch(/anyone who holds this receipt id gets the same verdict/)
    expect(stdout).toContain('TEST ROOT: the quote chains to a test root CA')
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
        // Nothing to qualify: the qualifications belong to a verdict.
        expect(stdout).not.toContain('What this does not prove')
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

describe('tollgate verify: whose answer, which root', { timeout: 120_000 }, () => {
  it('fails on the simulated enclave’s test root unless --allow-test-root (exit 1)', async () => {
    const { code, stdout } = await run(receiptId)
    expect(code).toBe(1)
    expect(stdout).toMatch(/✗ attestation report verified: .*TEST root CA.*\[test_root\]/)
    expect(stdout).toMatch(/^TEST ROOT: .*proves nothing about the hardware/m)
    expect(stdout).toContain('NOT verified.')
    expect(stdout).not.toContain('What this does not prove')
  })

  it('binds the check to --payment and --response: another buyer’s fail, the own verify', async () => {
    const other = await answer('Whose answer is this?')
    const otherFile = join(folder, 'other.sse')
    writeFileSync(otherFile, other.text)
    const wrongKey = await verify(receiptId, '--payment', other.keyId, '--json')
    expect(wrongKey.code).toBe(1)
    expect(JSON.parse(wrongKey.stdout)).toMatchObject({
      failedStep: 'gateway_receipt',
      code: 'payment_mismatch',
    })
    const wrongBytes = await verify(receiptId, '--response', otherFile)
    expect(wrongBytes.code).toBe(1)
    expect(wrongBytes.stdout).toMatch(/✗ response hash .*\[received_bytes_mismatch\]/)
    const own = await verify(receiptId, '--payment', `${keyId}:${callId}`, '--response', received)
    expect(own.code).toBe(0)
    expect(own.stdout).toMatch(/✓ response hash .* = the bytes you received/)
    expect(own.stdout).toMatch(/✓ gateway receipt .*debited from key_.* = your payment/)
    expect(own.stdout).toContain('Verified.')
    expect(own.stdout).not.toMatch(/anyone who holds this receipt id/)
  })

  it('refuses malformed flags with one line (exit 1, the usage-error code of every command)', async () => {
    const payment = await run(receiptId, '--payment', 'not a payment')
    expect(payment.code).toBe(1)
    expect(payment.stderr).toBe(
      'error invalid_options: --payment: a settlement digest, or key_… with an optional :call_…\n',
    )
    const file = await run(receiptId, '--response', join(folder, 'missing.sse'))
    expect(file.code).toBe(1)
    expect(file.stderr).toMatch(/^error invalid_options: --response: cannot read .*ENOENT\)\n$/)
    expect((await run(receiptId, '--wait', 'soon')).code).toBe(1)
  })
})

describe('tollgate verify right after an answer', { timeout: 120_000 }, () => {
  it('waits for the pending anchor with a progress line, then says verified (exit 0)', async () => {
    const fresh = await answer('Just answered')
    const child = spawn(
      process.execPath,
      cliArgs('verify', fresh.id, '--inference-url', gateway.url, '--allow-test-root'),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    const waiting = new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
        if (stderr.includes('waiting up to 30 s for the ledger anchor')) resolve()
      })
    })
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)))
    // The CLI is waiting: only now does the gateway anchor the receipt (its worker's round).
    await Promise.race([waiting, exited])
    expect(plain(stderr)).toBe(
      'Every other step verified; waiting up to 30 s for the ledger anchor (--no-wait to skip)…\n',
    )
    const anchored = await fetch(`${gateway.url}/v1/aci/anchor/${fresh.id}`, { method: 'POST' })
    expect(anchored.status).toBe(200)
    expect(await exited).toBe(0)
    expect(plain(stdout)).toMatch(/✓ ledger anchor event matches the receipt/)
    expect(plain(stdout)).toContain('Verified.')
  })

  it('with --no-wait exits 3 when everything but the pending anchor verified', async () => {
    const fresh = await answer('Not anchored yet')
    const { code, stdout, stderr } = await verify(fresh.id, '--no-wait')
    expect(code).toBe(3)
    expect(stderr).toBe('')
    expect(stdout).toMatch(/… ledger anchor event matches the receipt: .*\[anchor_pending\]/)
    expect(stdout).toContain(
      `Verified, except the ledger anchor: still pending. Run tollgate verify ${fresh.id} again later.`,
    )
    expect(stdout).toContain('What this does not prove:')
    const json = await verify(fresh.id, '--no-wait', '--json')
    expect(json.code).toBe(3)
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'anchor_pending' })
  })
})
