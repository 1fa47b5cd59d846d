import { Command } from 'commander'
import pkg from '../package.json' with { type: 'json' }

/**
 * The sub-commands, each in its own module under `src/cli/`, imported only when it runs (or its
 * help is asked for): a sub-command loads nothing another one needs — `tollgate pay` never loads
 * the gateway's Hono, pino or SQLite driver, which a buyer need not have installed. The one-line
 * summaries are what `tollgate --help` lists without loading any of them.
 */
const subcommands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  ledger: {
    summary: 'Run a local Sui ledger emulator with a faucet (payments on it are NOT real)',
    load: async () => (await import('./cli/ledger.js')).ledgerCommand(),
  },
  gateway: {
    summary: 'Run the reference gateway (the paid catalog over upstream APIs)',
    load: async () => (await import('./cli/gateway.js')).gatewayCommand(),
  },
  keys: {
    summary: 'API keys of the private inference API: create, list, revoke, credit',
    load: async () => (await import('./cli/keys.js')).keysCommand(),
  },
  refunds: {
    summary: 'List the refunds owed to buyers',
    load: async () => (await import('./cli/refunds.js')).refundsCommand(),
  },
  wallet: {
    summary: 'The buyer wallet: its key and spending limits',
    load: async () => (await import('./cli/wallet.js')).walletCommand(),
  },
  pay: {
    summary: 'Call a paid HTTP endpoint, paying its 402 in USDC',
    load: async () => (await import('./cli/pay.js')).payCommand(),
  },
  session: {
    summary: 'Session channels paid by vouchers (pay --session): list, close, withdraw',
    load: async () => (await import('./cli/session.js')).sessionCommand(),
  },
  job: {
    summary: 'Escrowed jobs: fund, deliver, release, reject, refund, review',
    load: async () => (await import('./cli/job.js')).jobCommand(),
  },
  agent: {
    summary: 'Agent identity on the ledger: register, show',
    load: async () => (await import('./cli/agent.js')).agentCommand(),
  },
  listing: {
    summary: "A seller's endpoints in a gateway's catalog: submit, status, delist",
    load: async () => (await import('./cli/listing.js')).listingCommand(),
  },
  mcp: {
    summary: "Run an MCP server exposing a gateway's catalog as paid tools (stdio or HTTP)",
    load: async () => (await import('./cli/mcp.js')).mcpCommand(),
  },
  conformance: {
    summary: 'Probe a seller endpoint against the listing gates and the x402/MPP rules',
    load: async () => (await import('./cli/conformance.js')).conformanceCommand(),
  },
  verify: {
    summary: "Verify a confidential answer's receipt, step by step (exit 0 only when verified)",
    load: async () => (await import('./cli/verify.js')).verifyCommand(),
  },
}

/** The `tollgate` command line. */
const program = new Command()
  .name('tollgate')
  .description('Per-request USDC payments on Sui for any HTTP route (x402 and MPP).')
  .version(pkg.version)

/**
 * The optional package a failed import named (`better-sqlite3`, `pg`, …), if that is why it failed:
 * the commands that open a store load it only when they run.
 */
function missingPackage(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (code !== 'ERR_MODULE_NOT_FOUND' || typeof message !== 'string') return undefined
  return /Cannot find package '((?:@[^/']+\/)?[^/']+)/.exec(message)?.[1]
}

const args = process.argv.slice(2)
const chosen = args[0] === 'help' ? args[1] : args[0]
try {
  for (const [name, { summary, load }] of Object.entries(subcommands)) {
    program.addCommand(name === chosen ? await load() : new Command(name).summary(summary))
  }
  await program.parseAsync(process.argv)
} catch (error) {
  const name = missingPackage(error)
  if (name !== undefined) {
    // One line, as for any misconfiguration: what is missing and the command that adds it.
    process.stderr.write(
      `tollgate ${chosen ?? ''}: needs the optional package ${name}, not installed here: npm install ${name}\n`,
    )
    process.exitCode = 2
  } else {
    // A failure a command did not word itself but that names its cause (a system error such as
    // ENOENT or ECONNREFUSED, or a PaymentError): one line, not a stack trace. Anything else is a
    // bug, and its trace is what a report needs.
    const line = oneLine(error)
    if (line === undefined) throw error
    process.stderr.write(`tollgate ${chosen ?? ''}: ${line}\n`)
    process.exitCode = 1
  }
}

/** `CODE: message` of an error that carries a string code, on one line; else `undefined`. */
function oneLine(error: unknown): string | undefined {
  const { code, message, errors } = (error ?? {}) as {
    code?: unknown
    message?: unknown
    errors?: unknown
  }
  if (typeof code !== 'string') return undefined
  // AggregateError (a connection refused on every address) keeps its reasons in `errors`.
  const first = Array.isArray(errors) ? (errors[0] as { message?: unknown } | undefined) : undefined
  const text =
    typeof message === 'string' && message !== '' ? message : String(first?.message ?? '')
  const flat = text.replace(/\s+/g, ' ').slice(0, 300)
  return flat.includes(code) ? flat : `${code}: ${flat}`
}
