/**
 * `tollgate pay [METHOD] URL [-d JSON] [--max 0.10] [--session] [--json]`: calls a paid endpoint
 * with the wallet in the config folder, paying its 402 within the price cap and the wallet limits
 * (with `--session`, over an MPP session channel: see `tollgate session`). Prints
 * the challenge, what it paid, the settlement digest and the response (JSON pretty-printed, SSE as
 * it arrives). Exit 0 when the answer is 2xx; 2 with the code when the client refused to pay; 1
 * for any other failure (a non-2xx answer, no answer).
 *
 * @module
 */
import { Command } from 'commander'
import pc from 'picocolors'
import { formatAmount, isPaymentError, Mpp, PaymentError, parseAmount } from 'tollgate'
import { type ChallengeEvent, createPayingFetch, type Payment, paymentOf } from 'tollgate/client'
import { ledgerOption, messageOf, networkOption, preferOption } from './options.js'
import { walletSessions } from './session.js'
import { fail, ledgerLine, moneyLabel, resolveLedger } from './wallet.js'
import { limitsFrom, loadSettings, loadWallet } from './walletFiles.js'

type PayOptions = {
  data?: string
  header: string[]
  max?: string
  json?: boolean
  ledger?: string
  network: string
  prefer?: 'x402' | 'mpp'
  session?: boolean
  maxDeposit?: string
}

const methods = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'])

function challengeJson(event: ChallengeEvent) {
  return {
    offered: [...new Set(event.offers.map((o) => o.dialect))],
    dialect: event.selected.dialect,
    amount: formatAmount(event.selected.amount),
    asset: event.selected.asset,
    payTo: event.selected.payTo,
    network: event.selected.network,
  }
}

function paymentJson(payment: Payment) {
  return {
    dialect: payment.dialect,
    amount: formatAmount(payment.amount),
    payer: payment.payer,
    payTo: payment.payTo,
    form: payment.form,
    digest: payment.digest,
    receipt: payment.receipt?.value ?? null,
  }
}

function line(label: string, value: string): void {
  console.log(`${pc.bold(label.padEnd(10))} ${value}`)
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

/** Builds the `pay` command. */
export function payCommand(): Command {
  return new Command('pay')
    .description('Call a paid HTTP endpoint, paying its 402 in USDC with the local wallet')
    .argument('<method-or-url>', 'HTTP method (default GET, or POST with -d), or the URL')
    .argument('[url]', 'the URL, when a method is given first')
    .option('-d, --data <json>', 'JSON request body (sent as application/json)')
    .option(
      '-H, --header <header>',
      'extra request header "Name: value" (repeatable)',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option('--max <usdc>', 'most this call may cost, in USDC (e.g. 0.10)')
    .option('--json', 'print one JSON object (for scripts)')
    .addOption(ledgerOption())
    .addOption(networkOption())
    .addOption(preferOption())
    .option(
      '--session',
      'pay over an MPP session when offered: a channel opened once, a voucher per call',
    )
    .option('--max-deposit <usdc>', 'with --session: most a channel may hold, in USDC (default 1)')
    .action(async (first: string, second: string | undefined, options: PayOptions) => {
      try {
        await pay(first, second, options)
      } catch (error) {
        fail(error, options.json)
      }
    })
}

async function pay(first: string, second: string | undefined, options: PayOptions) {
  const explicit = second !== undefined
  const url = explicit ? second : first
  const method = explicit ? first.toUpperCase() : options.data === undefined ? 'GET' : 'POST'
  if (!methods.has(method))
    throw new PaymentError('invalid_options', `Unknown HTTP method ${first}.`)
  // Usage errors: exit 1 with invalid_options, as in every command.
  if (options.data !== undefined) {
    try {
      JSON.parse(options.data)
    } catch (error) {
      throw new PaymentError(
        'invalid_options',
        `-d is not JSON (${(error as Error).message}): give it as '{"key":"value"}'`,
      )
    }
  }
  if (options.max !== undefined) {
    try {
      parseAmount(options.max)
    } catch {
      throw new PaymentError(
        'invalid_options',
        `--max must be a USDC amount like 0.10, not "${options.max.slice(0, 40)}"`,
      )
    }
  }
  const headers = new Headers()
  for (const header of options.header) {
    const at = header.indexOf(':')
    if (at <= 0) {
      throw new PaymentError('invalid_options', `A header must look like "Name: value": ${header}`)
    }
    headers.set(header.slice(0, at).trim(), header.slice(at + 1).trim())
  }
  const json = options.json === true
  if (options.session === true) {
    const maxDeposit =
      options.maxDeposit === undefined ? undefined : parseAmount(options.maxDeposit)
    const {
      sessions,
      label,
      line: ledgerText,
    } = await walletSessions(options.ledger, options.network, maxDeposit)
    if (!json) console.log(ledgerText)
    const response = await sessions.fetch(url, {
      method,
      headers,
      ...(options.data === undefined ? {} : { body: options.data }),
    })
    const header = response.headers.get('payment-receipt')
    const receipt = header === null ? undefined : Mpp.decodeReceipt(header)
    const body = await response.text()
    if (json) {
      console.log(
        JSON.stringify({ ok: response.ok, status: response.status, receipt, body }, null, 2),
      )
    } else {
      if (receipt?.intent === 'session') {
        line(
          'paid',
          `over session ${String(receipt.channelId)}: ${formatAmount(BigInt(String(receipt.spent)))} USDC spent in all${label}`,
        )
      } else {
        line('paid', pc.dim('nothing over a session (none offered or asked)'))
      }
      line('status', `${response.status} ${response.statusText}`)
      console.log(pretty(body))
    }
    if (!response.ok) process.exitCode = 1
    return
  }
  const settings = await loadSettings()
  const signer = await loadWallet()
  let challenge: ReturnType<typeof challengeJson> | null = null
  const ledger = await resolveLedger(options.ledger, options.network)
  if (!json) console.log(ledgerLine(ledger, options.network))
  const label = moneyLabel(ledger)
  const fetcher = createPayingFetch({
    signer,
    ledger: ledger.url,
    network: options.network,
    limits: limitsFrom(settings),
    ...(options.max === undefined ? {} : { maxPrice: options.max }),
    ...(options.prefer === undefined ? {} : { prefer: options.prefer }),
    onChallenge: (event) => {
      challenge = challengeJson(event)
      if (!json) {
        line(
          'challenge',
          `${challenge.amount} USDC to ${challenge.payTo} on ${challenge.network} (offered: ${challenge.offered.join(', ')})${label}`,
        )
      }
    },
  })
  let response: Response
  try {
    response = await fetcher(url, {
      method,
      headers,
      ...(options.data === undefined ? {} : { body: options.data }),
    })
  } catch (error) {
    // A PaymentError says itself what happened; anything else is the seller not answering.
    if (isPaymentError(error)) throw error
    throw new PaymentError(
      'unreachable',
      `Cannot reach ${url} (${connectionCause(error)}). Check the URL and that the seller is running.`,
      { cause: error },
    )
  }
  const payment = paymentOf(response)
  if (!json) {
    if (payment) {
      line(
        'paid',
        `${formatAmount(payment.amount)} USDC in ${payment.dialect} (${payment.form} form) from ${payment.payer}${label}`,
      )
      line('digest', payment.digest)
    } else {
      line('paid', pc.dim('nothing (no payment asked)'))
    }
    line('status', `${response.status} ${response.statusText}`)
  }
  const type = response.headers.get('content-type') ?? ''
  let body: string
  if (type.includes('text/event-stream') && response.body && !json) {
    body = ''
    const decoder = new TextDecoder()
    const reader = response.body.getReader()
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const text = decoder.decode(read.value, { stream: true })
      process.stdout.write(text)
      body += text
    }
  } else {
    body = await response.text()
    if (!json) console.log(pretty(body))
  }
  if (json) {
    let parsed: unknown = body
    try {
      parsed = JSON.parse(body)
    } catch {
      // Not JSON: keep the text.
    }
    console.log(
      JSON.stringify(
        {
          ok: response.ok,
          status: response.status,
          ledger: ledger.url,
          testMoney: ledger.local !== undefined,
          challenge,
          payment: payment ? paymentJson(payment) : null,
          body: parsed,
        },
        null,
        2,
      ),
    )
  }
  if (!response.ok) process.exitCode = 1
}

/** Why a request got no answer: the innermost cause's code and message (`ECONNREFUSED …`). */
function connectionCause(error: unknown): string {
  let text = messageOf(error)
  let current = error instanceof Error ? error.cause : undefined
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code
    const message =
      current.message === '' && current instanceof AggregateError
        ? String((current.errors[0] as Error | undefined)?.message ?? '')
        : current.message
    text = typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message
    current = current.cause
  }
  return text.slice(0, 200)
}
