/**
 * `tollgate job fund|status|deliver|release|reject|refund|review`: escrowed jobs through a gateway's
 * `/v1/jobs` routes, signed with the wallet in the config folder. `fund` asks the gateway for the
 * job's terms — a 402 demanding escrow, which the paying client refuses to instant-pay
 * (`ESCROW_REQUIRED`) — and funds a job on those terms instead. Every move is built and signed
 * here; the gateway relays it to the ledger. Exit 0 on success; 2 with the code when refused; 1
 * otherwise.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import { toBase64 } from '@mysten/sui/utils'
import { Command, Option } from 'commander'
import pc from 'picocolors'
import { Escrow, formatAmount, isPaymentError, PaymentError, type PaymentErrorCode } from 'tollgate'
import {
  createJobClient,
  createPayingFetch,
  createWalletLimits,
  type MoveSubmitter,
  type PinnedEscrow,
  type SigningMove,
  usdcTypeOf,
} from 'tollgate/client'
import { ledgerOption, networkOption } from './options.js'
import { fail, ledgerLine, moneyLabel, type ResolvedLedger, resolveLedger } from './wallet.js'
import { limitsFrom, loadSettings, loadWallet, walletPaths } from './walletFiles.js'

type Common = {
  gateway: string
  ledger?: string
  network: string
  escrowPackage?: string
  escrowConfig?: string
  json?: boolean
}

const gatewayOption = () =>
  new Option('--gateway <url>', 'the gateway base URL')
    .env('TOLLGATE_GATEWAY')
    .makeOptionMandatory()

function base(gateway: string): string {
  return gateway.replace(/\/+$/, '')
}

/** Relays signed moves to the gateway. */
function gatewaySubmitter(gateway: string): MoveSubmitter {
  return async ({ move, jobId, transaction, signature }) => {
    const path = move === 'fund' ? '/v1/jobs/fund' : `/v1/jobs/${jobId}/${move}`
    const response = await fetch(`${base(gateway)}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ transaction: toBase64(transaction), signature }),
    })
    const body = (await response.json().catch(() => ({}))) as {
      code?: PaymentErrorCode
      detail?: string
      digest?: string
      jobId?: string
    }
    if (!response.ok) {
      throw new PaymentError(
        body.code ?? 'job_move_failed',
        body.detail ?? `HTTP ${response.status}`,
        {
          details: { status: response.status, ...(body.digest ? { digest: body.digest } : {}) },
        },
      )
    }
    return { digest: body.digest ?? '', jobId: body.jobId ?? jobId ?? '' }
  }
}

/**
 * The escrow deployment this buyer calls: `--escrow-package` and `--escrow-config`, else what the
 * local ledger reported when it was recorded in `settings.json`. Never the gateway's terms.
 */
function pinnedEscrow(options: Common, ledger: ResolvedLedger): PinnedEscrow & { from: string } {
  const asset = ledger.local?.usdcType ?? usdcTypeOf(options.network) ?? ''
  if (options.escrowPackage !== undefined || options.escrowConfig !== undefined) {
    if (options.escrowPackage === undefined || options.escrowConfig === undefined) {
      throw new PaymentError(
        'invalid_options',
        'Give both --escrow-package and --escrow-config, or neither.',
      )
    }
    return {
      package: options.escrowPackage,
      config: options.escrowConfig,
      asset,
      from: '--escrow-package',
    }
  }
  if (ledger.local !== undefined) {
    return {
      package: ledger.local.modulesPackage,
      config: ledger.local.escrowConfig,
      asset,
      from: walletPaths().settings,
    }
  }
  throw new PaymentError(
    'invalid_config',
    `No escrow package is known for the ledger ${ledger.url}: on a local ledger, run tollgate wallet fund --ledger ${ledger.url} (it records the ids the ledger reports); elsewhere pass --escrow-package and --escrow-config.`,
  )
}

/** Prints what is about to be signed (stderr, or nothing with --json). */
function showSigning(options: Common, ledger: ResolvedLedger, from: string) {
  return (move: SigningMove) => {
    if (options.json) return
    const row = (k: string, v: string) => console.error(`${pc.bold(k.padEnd(12))} ${v}`)
    row('signing', `escrow::${move.move} on package ${move.package} (pinned: ${from})`)
    if (move.jobId !== undefined) row('job', move.jobId)
    const terms = move.terms
    if (terms !== undefined) {
      row('seller', terms.seller)
      row('amount', `${formatAmount(BigInt(terms.amount))} USDC${moneyLabel(ledger)}`)
      row('asset', terms.asset)
      row('fee', `${terms.feeBps} bps (config ${terms.config})`)
      row('deliver by', new Date(terms.deliverByMs).toISOString())
      row('review', `${Math.round(terms.reviewMs / 1000)} s`)
    }
  }
}

async function jobClient(options: Common) {
  const signer = await loadWallet()
  const ledger = await resolveLedger(options.ledger, options.network)
  if (!options.json) console.log(ledgerLine(ledger, options.network))
  const escrow = pinnedEscrow(options, ledger)
  return {
    signer,
    ledger,
    escrow,
    jobs: createJobClient({
      signer,
      ledger: ledger.url,
      escrow,
      submit: gatewaySubmitter(options.gateway),
      onSign: showSigning(options, ledger, escrow.from),
    }),
  }
}

function jobView(job: Escrow.EscrowJob) {
  return {
    id: job.id,
    state: job.state,
    buyer: job.buyer,
    seller: job.seller,
    amount: formatAmount(job.amount),
    feeBps: Number(job.feeBps),
    deliverByMs: Number(job.deliverByMs),
    reviewMs: Number(job.reviewMs),
    deliveryHash: job.deliveryHash,
    rejections: Number(job.rejections),
    paidToSeller: formatAmount(job.paidToSeller),
    paidFee: formatAmount(job.paidFee),
    refunded: formatAmount(job.refunded),
  }
}

/** A duration in words: `45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`. */
function duration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000)
  if (s < 60) return `${s} s`
  const min = Math.floor(s / 60)
  if (min < 60) return `${min} min`
  const h = Math.floor(min / 60)
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`
  const d = Math.floor(h / 24)
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`
}

/** A job as a table: amounts in USDC, the deadline as a date and how far off it is. */
function printJob(job: ReturnType<typeof jobView>): void {
  const left = job.deliverByMs - Date.now()
  const rows: [string, string][] = [
    ['job', job.id],
    ['state', job.state],
    ['buyer', job.buyer],
    ['seller', job.seller],
    ['amount', `${job.amount} USDC (fee ${job.feeBps / 100} %)`],
    [
      'deliver by',
      `${new Date(job.deliverByMs).toISOString()} (${left > 0 ? `in ${duration(left)}` : `${duration(left)} ago`})`,
    ],
    ['review', `${duration(job.reviewMs)} after delivery`],
    ['delivery', /^(0x)?0*$/.test(job.deliveryHash) ? 'none yet' : `sha256 ${job.deliveryHash}`],
    ['rejections', String(job.rejections)],
    [
      'paid out',
      `${job.paidToSeller} USDC to the seller, ${job.paidFee} fee, ${job.refunded} refunded`,
    ],
  ]
  for (const [label, text] of rows) console.log(`${pc.bold(label.padEnd(12))} ${text}`)
}

function print(json: boolean | undefined, value: Record<string, unknown>): void {
  if (json) {
    console.log(JSON.stringify({ ok: true, ...value }, null, 2))
    return
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === 'job' && typeof v === 'object' && v !== null && 'deliverByMs' in v) {
      printJob(v as ReturnType<typeof jobView>)
      continue
    }
    const text = typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)
    console.log(`${pc.bold(k.padEnd(12))} ${text}`)
  }
}

async function showJob(jobs: ReturnType<typeof createJobClient>, id: string) {
  const job = await jobs.status(id)
  if (!job) throw new PaymentError('job_not_found', `No escrow job ${id} on the ledger.`)
  return jobView(job)
}

function withCommon(command: Command): Command {
  return command
    .addOption(gatewayOption())
    .addOption(ledgerOption())
    .addOption(networkOption())
    .addOption(
      new Option(
        '--escrow-package <id>',
        'the escrow package to call (default: the one the local ledger reported, in settings.json)',
      ).env('TOLLGATE_ESCROW_PACKAGE'),
    )
    .addOption(
      new Option('--escrow-config <id>', 'its EscrowConfig object (with --escrow-package)').env(
        'TOLLGATE_ESCROW_CONFIG',
      ),
    )
    .option('--json', 'print one JSON object (for scripts)')
}

function action<A extends unknown[]>(run: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    const options = args.find((a) => typeof a === 'object' && a !== null && 'gateway' in a) as
      | Common
      | undefined
    try {
      await run(...args)
    } catch (error) {
      fail(error, options?.json)
    }
  }
}

/** Builds the `job` command. */
export function jobCommand(): Command {
  const job = new Command('job').description(
    'Escrowed jobs: fund, status, deliver, release, reject, refund, review (through a gateway)',
  )

  job.addCommand(
    withCommon(
      new Command('fund')
        .description('Fund a job: the USDC is held on the ledger until released or refunded')
        .requiredOption('--seller <address>', 'who does the job')
        .requiredOption('--amount <usdc>', 'the budget, in USDC (e.g. 2.5)')
        .requiredOption('--description <text>', 'what the job is')
        .option('--deliver-within <seconds>', 'delivery deadline from now', '3600')
        .option('--review <seconds>', 'review window of a delivery', '3600')
        .option('--max <usdc>', 'most the job may lock, in USDC'),
    ).action(
      action(
        async (
          options: Common & {
            seller: string
            amount: string
            description: string
            deliverWithin: string
            review: string
            max?: string
          },
        ) => {
          const { signer, ledger, escrow } = await jobClient(options)
          const pay = createPayingFetch({
            signer,
            ledger: ledger.url,
            network: options.network,
            limits: false,
          })
          let refusal: unknown
          try {
            const response = await pay(`${base(options.gateway)}/v1/jobs`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                seller: options.seller,
                amount: options.amount,
                description: options.description,
                deliverWithinSeconds: Number(options.deliverWithin),
                reviewSeconds: Number(options.review),
              }),
            })
            throw new PaymentError(
              'NO_PAYABLE_REQUIREMENT',
              `Expected escrow terms, got HTTP ${response.status}.`,
            )
          } catch (error) {
            if (!isPaymentError(error) || error.code !== 'ESCROW_REQUIRED') throw error
            refusal = error
          }
          const funder = createJobClient({
            signer,
            ledger: ledger.url,
            escrow,
            limits: createWalletLimits(limitsFrom(await loadSettings())),
            ...(options.max === undefined ? {} : { maxPrice: options.max }),
            submit: gatewaySubmitter(options.gateway),
            onSign: showSigning(options, ledger, escrow.from),
          })
          // The gateway's terms must say what was asked: this seller, this amount, and the
          // pinned package, config object and USDC (checked before anything is signed).
          const { jobId, digest, terms } = await funder.fundJob(refusal, {
            seller: options.seller,
            amount: options.amount,
          })
          print(options.json, {
            jobId,
            digest,
            amount: formatAmount(BigInt(terms.amount)),
            feeBps: terms.feeBps,
            seller: terms.seller,
            deliverByMs: terms.deliverByMs,
          })
        },
      ),
    ),
  )

  job.addCommand(
    withCommon(new Command('status').description('Show a job').argument('<id>', 'job id')).action(
      action(async (id: string, options: Common) => {
        const { jobs } = await jobClient(options)
        print(options.json, { job: await showJob(jobs, id) })
      }),
    ),
  )

  job.addCommand(
    withCommon(
      new Command('deliver')
        .description('Deliver a job (seller): commits the content’s SHA-256 on the ledger')
        .argument('<id>', 'job id')
        .option('--file <path>', 'the delivered file')
        .option('--text <text>', 'the delivered text'),
    ).action(
      action(async (id: string, options: Common & { file?: string; text?: string }) => {
        if ((options.file === undefined) === (options.text === undefined)) {
          throw new PaymentError('invalid_options', 'Give exactly one of --file or --text.')
        }
        const content =
          options.file !== undefined ? await readFile(options.file) : (options.text as string)
        const { jobs } = await jobClient(options)
        const hash = Escrow.deliveryHash(content)
        const { digest } = await jobs.deliver(id, hash)
        print(options.json, { digest, deliveryHash: hash, job: await showJob(jobs, id) })
      }),
    ),
  )

  for (const [name, summary] of [
    ['release', 'Accept the delivery (buyer): pays the seller minus the fee'],
    ['refund', 'Return the USDC to the buyer (seller any time; buyer after the deadline)'],
  ] as const) {
    job.addCommand(
      withCommon(new Command(name).description(summary).argument('<id>', 'job id')).action(
        action(async (id: string, options: Common) => {
          const { jobs } = await jobClient(options)
          const { digest } = name === 'release' ? await jobs.release(id) : await jobs.refund(id)
          print(options.json, { digest, job: await showJob(jobs, id) })
        }),
      ),
    )
  }

  job.addCommand(
    withCommon(
      new Command('reject')
        .description('Reject the delivery (buyer, within the review window)')
        .argument('<id>', 'job id')
        .option('--reason <text>', 'why', ''),
    ).action(
      action(async (id: string, options: Common & { reason: string }) => {
        const { jobs } = await jobClient(options)
        const { digest } = await jobs.reject(id, options.reason)
        print(options.json, { digest, job: await showJob(jobs, id) })
      }),
    ),
  )

  job.addCommand(
    withCommon(
      new Command('review')
        .description('Review a released job, 1 to 5 stars (buyer)')
        .argument('<id>', 'job id')
        .requiredOption('--rating <stars>', '1 to 5')
        .option('--comment <text>', 'a comment', ''),
    ).action(
      action(async (id: string, options: Common & { rating: string; comment: string }) => {
        const signer = await loadWallet()
        const rating = Number(options.rating)
        const { signature } = await signer.signPersonalMessage(
          Escrow.reviewMessage({ purchaseId: id, rating, comment: options.comment }),
        )
        const response = await fetch(`${base(options.gateway)}/v1/jobs/${id}/review`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            rating,
            comment: options.comment,
            reviewer: signer.toSuiAddress(),
            signature,
          }),
        })
        const body = (await response.json().catch(() => ({}))) as Record<string, unknown>
        if (!response.ok) {
          throw new PaymentError(
            (body.code as PaymentErrorCode | undefined) ?? 'review_refused',
            String(body.detail ?? `HTTP ${response.status}`),
            { details: { reason: body.reason } },
          )
        }
        print(options.json, body)
      }),
    ),
  )
  return job
}
