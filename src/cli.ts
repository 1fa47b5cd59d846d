import { Command } from 'commander'
import pkg from '../package.json' with { type: 'json' }
import { ledgerCommand } from './cli/ledger.js'

/** The `tollgate` command line. Each sub-command lives in its own module under `src/cli/`. */
const program = new Command()
  .name('tollgate')
  .description('Per-request USDC payments on Sui for any HTTP route (x402 and MPP).')
  .version(pkg.version)

program.addCommand(ledgerCommand())

await program.parseAsync(process.argv)
