/**
 * The model server of the inference benchmark, in its own process (a model provider is not in the
 * gateway's process in production). Prints `{ baseUrl }` as one JSON line; serves until killed.
 */
import { startModelUpstream } from '../../src/testing/upstreams/model.js'

const model = await startModelUpstream()
process.stdout.write(`${JSON.stringify({ baseUrl: model.baseUrl })}\n`)
const stop = () => void model.stop().then(() => process.exit(0))
process.on('SIGTERM', stop)
process.stdin.on('end', stop)
process.stdin.resume()
