/**
 * Hardware quotes behind an ACI attestation report, behind one pluggable interface: a
 * {@link QuoteVerifier} turns the quote bytes into the measurement, the 64 report-data bytes and
 * the TCB status it vouches for, or says why it cannot. Production TDX quotes are checked with DCAP
 * collateral (`@phala/dcap-qvl`); tests use the simulated quote format below, signed under a test
 * root key and checked by {@link simulatedQuoteVerifier} with a real Ed25519 signature check.
 *
 * Simulated quote layout (bytes): `"TGSQ"` magic (4) ‖ version 1 (1) ‖ TCB status code (1) ‖
 * measurement (48) ‖ report data (64) ‖ Ed25519 signature by the root key over everything before (64).
 *
 * @module
 */

/** The TCB status a quote reports. `Revoked` and `Unknown` fail verification. */
export type TcbStatus = 'UpToDate' | 'SWHardeningNeeded' | 'OutOfDate' | 'Revoked' | 'Unknown'

/** What a quote verifier concluded: the quote's claims, or why it was not accepted. */
export type QuoteVerdict =
  | { status: 'valid'; measurement: string; reportData: Uint8Array; tcbStatus: TcbStatus }
  | { status: 'invalid'; reason: string }

/** Checks a hardware quote. Implementations must verify the quote's signature chain. */
export type QuoteVerifier = {
  /** The TEE type this verifier accepts, as named in the report (`tee_type`). */
  teeType: string
  verify(quote: Uint8Array): Promise<QuoteVerdict>
}

const MAGIC = [0x54, 0x47, 0x53, 0x51] // "TGSQ"
const TCB_CODES: readonly TcbStatus[] = [
  'UpToDate',
  'SWHardeningNeeded',
  'OutOfDate',
  'Revoked',
  'Unknown',
]
/** Length of a simulated quote, bytes. */
export const SIMULATED_QUOTE_LENGTH = 4 + 1 + 1 + 48 + 64 + 64

/** The TEE type of simulated quotes. */
export const SIMULATED_TEE_TYPE = 'simulated-tdx'

/** Body of a simulated quote before its signature. */
export function simulatedQuoteBody(fields: {
  measurement: Uint8Array
  reportData: Uint8Array
  tcbStatus: TcbStatus
}): Uint8Array {
  if (fields.measurement.byteLength !== 48) throw new RangeError('measurement must be 48 bytes')
  if (fields.reportData.byteLength !== 64) throw new RangeError('report data must be 64 bytes')
  const body = new Uint8Array(SIMULATED_QUOTE_LENGTH - 64)
  body.set(MAGIC, 0)
  body[4] = 1
  body[5] = TCB_CODES.indexOf(fields.tcbStatus)
  body.set(fields.measurement, 6)
  body.set(fields.reportData, 54)
  return body
}

/**
 * A {@link QuoteVerifier} for simulated quotes signed by the given Ed25519 root key (raw 32 bytes).
 * It checks the layout and the root signature with WebCrypto; it proves nothing about hardware.
 *
 * @param rootPublicKey - the test root's raw Ed25519 public key; only quotes it signed are valid.
 * @example
 * ```ts
 * const verifier = simulatedQuoteVerifier(enclave.rootPublicKey)
 * ```
 */
export function simulatedQuoteVerifier(rootPublicKey: Uint8Array): QuoteVerifier {
  const key = crypto.subtle.importKey('raw', rootPublicKey as BufferSource, 'Ed25519', false, [
    'verify',
  ])
  return {
    teeType: SIMULATED_TEE_TYPE,
    async verify(quote) {
      if (quote.byteLength !== SIMULATED_QUOTE_LENGTH) {
        return { status: 'invalid', reason: 'quote has the wrong length' }
      }
      if (!MAGIC.every((b, i) => quote[i] === b) || quote[4] !== 1) {
        return { status: 'invalid', reason: 'not a simulated quote (version 1)' }
      }
      const tcbStatus = TCB_CODES[quote[5] ?? 255]
      if (!tcbStatus) return { status: 'invalid', reason: 'unknown TCB status code' }
      const body = quote.subarray(0, SIMULATED_QUOTE_LENGTH - 64)
      const signature = quote.subarray(SIMULATED_QUOTE_LENGTH - 64)
      const ok = await crypto.subtle.verify(
        'Ed25519',
        await key,
        signature as BufferSource,
        body as BufferSource,
      )
      if (!ok) return { status: 'invalid', reason: 'quote signature does not verify' }
      return {
        status: 'valid',
        measurement: toHex(quote.subarray(6, 54)),
        reportData: quote.slice(54, 118),
        tcbStatus,
      }
    },
  }
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}
