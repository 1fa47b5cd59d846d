/**
 * The simulated enclave of the inference benchmark, in its own process (an enclave is not in the
 * gateway's process in production). Prints `{ model }` (the confidential model's configuration
 * entry, served by this enclave) as one JSON line; serves until killed.
 */
import { defaultConfidentialModel } from '../../reference-gateway/inference/models.js'
import { startSimulatedEnclave } from '../../src/testing/enclave/index.js'

const enclave = await startSimulatedEnclave()
process.stdout.write(`${JSON.stringify({ model: defaultConfidentialModel(enclave) })}\n`)
const stop = () => void enclave.stop().then(() => process.exit(0))
process.on('SIGTERM', stop)
process.stdin.on('end', stop)
process.stdin.resume()
