import { Command } from 'commander'
import pkg from '../package.json' with { type: 'json' }
import { conformanceCommand } from './cli/conformance.js'
import { gatewayCommand } from './cli/gateway.js'
import { ledgerCommand } from './cli/ledger.js'
import { payCommand } from './cli/pay.js'
import { refundsCommand } from './cli/refunds.js'
import { walletCommand } from './cli/wallet.js'

/** The `tollgate` command line. Each sub-command lives in its own module under `src/cli/`. */
const program = new Command()
  .name('tollgate')
  .description('Per-request USDC payments on Sui for any HTTP route (x402 and MPP).')
  .version(pkg.version)

program.addCommand(ledgerCommand())
program.addCommand(gatewayCommand())
program.addCommand(refundsCommand())
program.addCommand(walletCommand())
program.addCommand(payCommand())
program.addCommand(conformanceCommand())

await program.parseAsync(process.argv)
