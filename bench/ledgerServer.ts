/**
 * Runs a local ledger in its own process for the benchmark (the node and the client do not share
 * one event loop, as in production). `LATENCY_MS` sets the settlement latency (default 0). Prints `{"url": …}` on the first line of stdout.
 */
import { startLedger } from '../src/testing/index.js'

const ledger = await startLedger({ latencyMs: Number(process.env.LATENCY_MS ?? 0) })
process.stdout.write(`${JSON.stringify({ url: ledger.url, usdcType: ledger.usdcType })}\n`)
const stop = () => void ledger.stop().then(() => process.exit(0))
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
process.stdin.on('end', stop)
process.stdin.resume()
