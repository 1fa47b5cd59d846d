/**
 * The stub upstreams of the gateway benchmark, in their own process (third-party APIs are not in
 * the gateway's process in production). Prints `{ baseUrls }` as one JSON line; serves until killed.
 */
import { startStubUpstreams } from '../../src/testing/upstreams/index.js'

const stubs = await startStubUpstreams()
process.stdout.write(`${JSON.stringify({ baseUrls: stubs.baseUrls })}\n`)
const stop = () => void stubs.stop().then(() => process.exit(0))
process.on('SIGTERM', stop)
process.stdin.on('end', stop)
process.stdin.resume()
