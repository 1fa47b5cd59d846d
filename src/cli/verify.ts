/**
 * `tollgate verify RECEIPT_ID`: prints the steps of `verifyInferenceReceipt` (the library's whole
 * check of a confidential answer from its receipt id: receipt, attested session, attestation,
 * workload, signature by an attested key, hashes, the gateway's receipt binding the payment, the
 * ledger anchor) with ✓ or ✗ (`--json` for machines); the exit code is 0 only when every step
 * passed.
 *
 * @module
 */
import { Command } from 'commander'
import pc from 'picocolors'
import { Attestation } from 'tollgate'

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
    .option('--root-key <hex>', 'pin the quote root CA by its SHA-256 (default: the gateway’s)')
    .option('--measurement <hex...>', 'pin the measurements to trust (default: the gateway’s)')
    .option('--ledger-url <url>', 'the ledger full node for the anchor (default: the gateway’s)')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        receiptId: string,
        flags: {
          inferenceUrl: string
          rootKey?: string
          measurement?: string[]
          ledgerUrl?: string
          json?: boolean
        },
      ) => {
        const root = flags.rootKey
        if (root !== undefined && !/^[0-9a-f]{64}$/.test(root)) {
          process.stderr.write('--root-key: the SHA-256 of the root CA, 64 lowercase hex\n')
          process.exitCode = 1
          return
        }
        const result = await Attestation.verifyInferenceReceipt(receiptId, {
          inferenceUrl: flags.inferenceUrl,
          ledger: flags.ledgerUrl,
          policy: { rootCaSha256: root, allowedMeasurements: flags.measurement },
        })
        process.exitCode = result.status === 'verified' ? 0 : 1
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
                ? pc.red('✗')
                : pc.dim('·')
          lines.push(`  ${mark} ${step.detail}${step.code === undefined ? '' : ` [${step.code}]`}`)
        }
        lines.push(
          result.status === 'verified' ? pc.green('Verified.') : pc.red('NOT verified.'),
          'What this does not prove:',
          ...result.notProven.map((line) => `  - ${line}`),
        )
        process.stdout.write(`${lines.join('\n')}\n`)
      },
    )
}
