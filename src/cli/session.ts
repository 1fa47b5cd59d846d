/**
 * `tollgate session list|close|withdraw`: the wallet's session channels (MPP sessions, paid by vouchers over
 * a payment channel: `tollgate pay --session`), kept in `sessions.json` beside the wallet. `list`
 * shows each channel (seller, deposit, the mark of what was signed, state); `close` ends one
 * cooperatively at its seller — the seller captures what was spent, the rest of the deposit comes
 * back and is restored to the wallet's limits.
 *
 * The channel package and registry a buyer pays through are pinned, never taken from a seller's
 * 402: on the local ledger they are the ones it reported (`tollgate ledger` / `wallet fund`
 * record them); no package is published on a public network yet, so there `--session` refuses.
 *
 * @module
 */
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Command } from 'commander'
import pc from 'picocolors'
import { formatAmount, PaymentError } from 'tollgate'
import {
  channelBookFileName,
  createChannelBook,
  createSessionFetch,
  createWalletLimits,
  type PinnedChannels,
  type SessionFetch,
} from 'tollgate/client'
import { ledgerOption, networkOption } from './options.js'
import { fail, ledgerLine, moneyLabel, resolveLedger } from './wallet.js'
import { limitsFrom, loadSettings, loadWallet, walletPaths } from './walletFiles.js'

/** The default most one channel may hold: 1 USDC. */
export const defaultMaxDeposit = 1_000_000n

/**
 * The channel package and registry pinned for the resolved ledger, and its client.
 *
 * @throws {PaymentError} `invalid_options` when no channel package is pinned for the ledger.
 */
export async function pinnedChannels(ledgerOption: string | undefined, network: string) {
  const ledger = await resolveLedger(ledgerOption, network)
  const registry = ledger.local?.channelRegistry
  if (ledger.local === undefined || registry === undefined) {
    throw new PaymentError(
      'invalid_options',
      `No session channel package is pinned for ${ledger.url}: sessions are paid on the local ledger only (tollgate ledger), until the package is published on ${network}.`,
    )
  }
  const pinned: PinnedChannels[] = [
    { network: network.replace(/^sui:/, ''), package: ledger.local.modulesPackage, registry },
  ]
  return {
    ledger,
    pinned,
    client: new SuiGrpcClient({ network: 'mainnet', baseUrl: ledger.url }),
    /** The wallet's channel book. */
    book: createChannelBook(join(walletPaths().home, channelBookFileName)),
  }
}

/**
 * The session buyer of the local wallet on the resolved ledger.
 *
 * @throws {PaymentError} `invalid_options` when no channel package is pinned for the ledger.
 */
export async function walletSessions(
  ledgerOption: string | undefined,
  network: string,
  maxDeposit: bigint = defaultMaxDeposit,
): Promise<{ sessions: SessionFetch; label: string; line: string }> {
  const settings = await loadSettings()
  const { ledger, pinned, client, book } = await pinnedChannels(ledgerOption, network)
  const sessions = createSessionFetch({
    signer: await loadWallet(),
    client,
    pinned,
    maxDeposit,
    limits: createWalletLimits(limitsFrom(settings)),
    book,
  })
  return { sessions, label: moneyLabel(ledger), line: ledgerLine(ledger, network) }
}

type Options = { ledger?: string; network: string; json?: boolean }

/** Builds the `session` command. */
export function sessionCommand(): Command {
  const command = new Command('session').description(
    'The wallet’s session channels (tollgate pay --session): list, close, withdraw',
  )
  command
    .command('list')
    .description('List the session channels in the wallet’s book')
    .option('--json', 'print JSON (for scripts)')
    .action(async (options: { json?: boolean }) => {
      try {
        const book = createChannelBook(join(walletPaths().home, channelBookFileName))
        const channels = await book.list()
        if (options.json === true) {
          console.log(
            JSON.stringify(
              channels.map(({ sessionKey: _secret, ...c }) => c),
              null,
              2,
            ),
          )
          return
        }
        if (channels.length === 0) console.log(pc.dim('no session channels'))
        for (const c of channels) {
          console.log(
            `${pc.bold(c.channelId)} ${c.state}  ${formatAmount(BigInt(c.deposit))} USDC deposit, ${formatAmount(BigInt(c.price))} per call, at ${c.url}`,
          )
        }
      } catch (error) {
        fail(error, options.json)
      }
    })
  command.addCommand(
    channelCommand(
      'close',
      'Close a channel at its seller: it takes what was spent, the rest comes back',
      async (sessions, channelId, label) => {
        const closed = await sessions.close(channelId)
        const json = {
          channelId: closed.channelId,
          spent: formatAmount(closed.spent),
          refunded: formatAmount(closed.refunded),
          digest: closed.digest ?? null,
        }
        const lines = [
          `${pc.bold('closed')}   ${closed.channelId}: ${json.spent} USDC spent, ${json.refunded} USDC back${label}`,
        ]
        if (closed.digest !== undefined) lines.push(`${pc.bold('digest')}   ${closed.digest}`)
        return { json, lines }
      },
    ),
  )
  command.addCommand(
    channelCommand(
      'withdraw',
      'Take a channel back without the seller: asks to close, then (run again after the grace period) withdraws what is left',
      async (sessions, channelId, label) => {
        const done = await sessions.withdraw(channelId)
        if (done.status === 'withdrawn') {
          const refunded = formatAmount(done.refunded)
          return {
            json: { status: done.status, refunded, digest: done.digest },
            lines: [`${pc.bold('withdrawn')} ${refunded} USDC back${label} (${done.digest})`],
          }
        }
        return {
          json: { status: done.status, graceEndsMs: done.graceEndsMs.toString() },
          lines: [
            `${pc.bold(done.status)} the grace period ends at ${new Date(Number(done.graceEndsMs)).toISOString()} (ledger clock); run this again then`,
          ],
        }
      },
    ),
  )
  return command
}

/**
 * A `session` subcommand acting on one channel through the wallet's session buyer: the ledger's
 * line first, then `act`'s lines, or its JSON alone with `--json`.
 */
function channelCommand(
  name: string,
  description: string,
  act: (
    sessions: SessionFetch,
    channelId: string,
    label: string,
  ) => Promise<{ json: unknown; lines: string[] }>,
): Command {
  return new Command(name)
    .description(description)
    .argument('<channel-id>', 'the channel (tollgate session list)')
    .addOption(ledgerOption())
    .addOption(networkOption())
    .option('--json', 'print JSON (for scripts)')
    .action(async (channelId: string, options: Options) => {
      try {
        const { sessions, label, line } = await walletSessions(options.ledger, options.network)
        if (options.json !== true) console.log(line)
        const out = await act(sessions, channelId, label)
        if (options.json === true) console.log(JSON.stringify(out.json))
        else for (const text of out.lines) console.log(text)
      } catch (error) {
        fail(error, options.json)
      }
    })
}
