/**
 * The model server of the inference and session benchmarks, in its own process (a model provider is
 * not in the gateway's process in production). `MODEL_REPLY_TOKENS` makes every reply that many
 * tokens long (before `max_tokens` cuts it), `MODEL_TOKEN_INTERVAL_MS` spaces streamed tokens.
 * Prints `{ baseUrl }` as one JSON line; serves until killed.
 */
import { startModelUpstream } from '../../src/testing/upstreams/model.js'

const numberOf = (value: string | undefined) => (value === undefined ? undefined : Number(value))
const model = await startModelUpstream({
  replyTokens: numberOf(process.env.MODEL_REPLY_TOKENS),
  tokenIntervalMs: numberOf(process.env.MODEL_TOKEN_INTERVAL_MS),
})
process.stdout.write(`${JSON.stringify({ baseUrl: model.baseUrl })}\n`)
const stop = () => void model.stop().then(() => process.exit(0))
process.on('SIGTERM', stop)
process.stdin.on('end', stop)
process.stdin.resume()
