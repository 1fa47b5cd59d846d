/**
 * `tollgate verify RECEIPT_ID`: prints the steps of `verifyInferenceReceipt` (the library's whole
 * check of a confidential answer from its receipt id: receipt, attested session, attestation,
 * workload, signature by an attested key, hashes, the gateway's receipt binding the payment, the
 * ledger anchor) with ✓ or ✗ (`--json` for machines).
 *
 * - `--payment` (a settlement digest, or `key_…[:call_…]`) and `--response FILE` (the body received)
 *   bind the check to the caller: another buyer's receipt then fails.
 * - A quote under a test root CA (not Intel's) fails unless `--allow-test-root`, and says so loudly
 *   when allowed.
 * - A receipt whose ledger anchor is still pending (the gateway anchors a few seconds after the
 *   answer) is waited for, bounded by `--wait` seconds, with a progress line on stderr; `--no-wait`
 *   does not wait.
 *
 * Exit codes (docs/buyers.md): 0 verified; 1 not verified or a usage error; 3 every step verified
 * but the ledger anchor is still pending.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { Command } from 'commander'
import pc from 'picocolors'
import { Attestation } from 'tollgate'

/** The exit code when every step passed but the anchor is still pending. */
const anchorPendingExit = 3
/** The exit code of a usage error. */
const usageExit = 1

type Flags = {
  inferenceUrl: string
  rootKey?: string
  measurement?: string[]
  ledgerUrl?: string
  payment?: string
  response?: string
  allowTestRoot?: boolean
  wait: boolean | string
  json?: boolean
}

/** `--payment`: a settlement digest (base58), or `key_…` with an optional `:call_…`. */
function parsePayment(value: string): Attestation.ExpectedPayment | undefined {
  const keyed = /^(key_[A-Za-z0-9_-]{1,120})(?::(call_[A-Za-z0-9_-]{1,120}))?$/.exec(value)
  if (keyed?.[1] !== undefined) return { keyId: keyed[1], callId: keyed[2] }
  return /^[1-9A-HJ-NP-Za-km-z]{32,64}$/.test(value) ? { digest: value } : undefined
}

/** Ends the command with a usage error: one line on stderr. */
function usage(message: string): void {
  process.stderr.write(`error invalid_options: ${message}\n`)
  process.exitCode = usageExit
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The `verify` command. */
export function verifyCommand(): Command {
  return new Command('verify')
    .description(
      "Verify a confidential answer's receipt (its x-receipt-id) against the attestation it relied on, step by step; exit 0 only when verified",
    )
    .argument('<receipt-id>', 'the x-receipt-id of the answer')
    .option(
      '--inference-url <url>',
      'the gateway (inference API) base URL',
      'http://127.0.0.1:4020',
    )
    .option(
      '--payment <digest|key_id[:call_id]>',
      'your payment for the answer: its settlement digest, or your API key id (and call id); the receipt must name it',
    )
    .option(
      '--response <file>',
      'the answer body you received (raw, as saved); the receipt must hash exactly these bytes',
    )
    .option('--root-key <hex>', 'pin the quote root CA by its SHA-256 (default: the gateway’s)')
    .option('--measurement <hex...>', 'pin the measurements to trust (default: the gateway’s)')
    .option(
      '--allow-test-root',
      'accept a quote under a test root CA (the simulated enclave’s): proves nothing about hardware',
    )
    .option('--ledger-url <url>', 'the ledger full node for the anchor (default: the gateway’s)')
    .option('--wait <seconds>', 'how long to wait for a pending ledger anchor', '30')
    .option('--no-wait', 'do not wait for a pending ledger anchor (exit 3 while it is pending)')
    .option('--json', 'print the result as JSON')
    .action(async (receiptId: string, flags: Flags) => {
      const root = flags.rootKey
      if (root !== undefined && !/^[0-9a-f]{64}$/.test(root)) {
        return usage('--root-key: the SHA-256 of the root CA, 64 lowercase hex')
      }
      const waitSeconds = flags.wait === false ? 0 : Number(flags.wait === true ? 30 : flags.wait)
      if (!Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > 600) {
        return usage('--wait: whole seconds, 0 to 600')
      }
      const expectPayment = flags.payment === undefined ? undefined : parsePayment(flags.payment)
      if (flags.payment !== undefined && expectPayment === undefined) {
        return usage('--payment: a settlement digest, or key_… with an optional :call_…')
      }
      let responseBytes: Uint8Array | undefined
      if (flags.response !== undefined) {
        try {
          responseBytes = readFileSync(flags.response)
        } catch (error) {
          const code = (error as { code?: string }).code ?? 'unreadable'
          return usage(`--response: cannot read ${flags.response} (${code})`)
        }
      }
      const verifier = Attestation.createInferenceReceiptVerifier({
        inferenceUrl: flags.inferenceUrl,
        ledger: flags.ledgerUrl,
        policy: { rootCaSha256: root, allowedMeasurements: flags.measurement },
        expectPayment,
        responseBytes,
        allowTestRoot: flags.allowTestRoot === true,
      })
      let result = await verifier.verify(receiptId)
      const pending = () => result.status === 'failed' && result.code === 'anchor_pending'
      if (pending() && waitSeconds > 0) {
        const started = Date.now()
        const tty = process.stderr.isTTY === true
        process.stderr.write(
          `Every other step verified; waiting up to ${waitSeconds} s for the ledger anchor (--no-wait to skip)…${tty ? '' : '\n'}`,
        )
        while (pending() && Date.now() - started < waitSeconds * 1000) {
          await sleep(1000)
          if (tty) {
            const elapsed = Math.round((Date.now() - started) / 1000)
            process.stderr.write(`\r\u001b[2KWaiting for the ledger anchor… ${elapsed} s`)
          }
          result = await verifier.verify(receiptId)
        }
        if (tty) process.stderr.write('\n')
      }
      process.exitCode = result.status === 'verified' ? 0 : pending() ? anchorPendingExit : 1
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
        return
      }
      const lines = [`Receipt ${receiptId} at ${flags.inferenceUrl}`]
      for (const step of result.steps) {
        const mark =
          step.status === 'passed'
            ? pc.green('✓')
            : step.status === 'failed'
              ? step.code === 'anchor_pending'
                ? pc.yellow('…')
                : pc.red('✗')
              : pc.dim('·')
        lines.push(`  ${mark} ${step.detail}${step.code === undefined ? '' : ` [${step.code}]`}`)
      }
      if (result.testRoot) {
        lines.push(
          pc.bold(
            pc.yellow(
              'TEST ROOT: the quote chains to a test root CA (accepted by --allow-test-root). It proves nothing about the hardware.',
            ),
          ),
        )
      }
      if (result.status === 'failed' && result.code === 'test_root') {
        lines.push(
          pc.bold(
            pc.red(
              'TEST ROOT: the quote chains to a test root CA, not Intel’s; it proves nothing about the hardware. Pass --allow-test-root only to try a local stack.',
            ),
          ),
        )
      }
      if (result.status === 'verified') lines.push(pc.green('Verified.'))
      else if (pending()) {
        lines.push(
          pc.yellow(
            `Verified, except the ledger anchor: still pending${waitSeconds > 0 ? ` after ${waitSeconds} s` : ''}. Run tollgate verify ${receiptId} again later.`,
          ),
        )
      } else lines.push(pc.red('NOT verified.'))
      // The qualifications belong to a verdict; a failed check has none to qualify.
      if (result.status === 'verified' || pending()) {
        lines.push('What this does not prove:', ...result.notProven.map((line) => `  - ${line}`))
      }
      process.stdout.write(`${lines.join('\n')}\n`)
    })
}
