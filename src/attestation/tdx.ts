/**
 * Intel TDX quotes checked with DCAP collateral by `@phala/dcap-qvl` (pure JS): the quote's ECDSA
 * signature by its attestation key, the QE report signed by the PCK certificate, the PCK chain up to
 * the trusted root CA (Intel's by default; a test root in tests), the CRLs, and the TCB info and QE
 * identity collateral signed under the same root; then the TCB status of the platform and QE.
 *
 * The measurement a TDX verdict reports is {@link tdxMeasurementOf} the TD's MRTD and RTMR0..3:
 * one digest an allow-list can hold, which changes when any of those registers changes.
 *
 * @module
 */
import { sha256, sha384 } from '@noble/hashes/sha2.js'
import { bytesToHex, concatBytes, hexToBytes } from '@noble/hashes/utils.js'
import { z } from 'zod'
import { decodeBase64 } from '../internal/base64.js'
import { type NativeBuffer, nativeBuffer } from '../internal/runtime.js'
import type { QuoteVerdict, QuoteVerifier, TcbStatus } from './quote.js'

/** The `tee_type` of reports whose quote is an Intel TDX quote. */
export const TDX_TEE_TYPE = 'intel-tdx'

const Hex = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^(?:[0-9a-fA-F]{2})*$/)
const Bytes = (max: number) => z.union([Hex(2 * max), z.array(z.int().min(0).max(255)).max(max)])
const Pem = z.string().max(64 * 1024)

/**
 * DCAP collateral of a TDX platform (the `@phala/dcap-qvl` shape: what `getCollateral` answers
 * from a PCCS): CRLs, the TCB info and QE identity JSON as signed, their raw P-256 signatures and
 * issuer chains (PEM). Byte fields are hex strings or byte arrays.
 */
export const TdxCollateralSchema = z.object({
  pck_crl_issuer_chain: Pem,
  root_ca_crl: Bytes(16 * 1024),
  pck_crl: Bytes(256 * 1024),
  tcb_info_issuer_chain: Pem,
  tcb_info: z.string().max(256 * 1024),
  tcb_info_signature: Bytes(64),
  qe_identity_issuer_chain: Pem,
  qe_identity: z.string().max(64 * 1024),
  qe_identity_signature: Bytes(64),
  /** The PCK chain (PEM), for quotes that do not embed it (certification data type 2/3). */
  pck_certificate_chain: Pem.nullable().optional(),
})
/** DCAP collateral of a TDX platform. */
export type TdxCollateral = z.infer<typeof TdxCollateralSchema>

/** The measurement registers of a TD report (hex, 48 bytes each). */
export type TdxRegisters = {
  mrtd: string
  rtmr0: string
  rtmr1: string
  rtmr2: string
  rtmr3: string
}

/**
 * The measurement of a TD: hex of SHA-384 over MRTD ‖ RTMR0 ‖ RTMR1 ‖ RTMR2 ‖ RTMR3 (the raw 48-byte
 * registers). Put it on a measurement allow-list.
 *
 * @example
 * ```ts
 * const allowed = [tdxMeasurementOf({ mrtd, rtmr0, rtmr1, rtmr2, rtmr3 })]
 * ```
 */
export function tdxMeasurementOf(registers: TdxRegisters): string {
  const values = [
    registers.mrtd,
    registers.rtmr0,
    registers.rtmr1,
    registers.rtmr2,
    registers.rtmr3,
  ]
  for (const value of values)
    if (!/^[0-9a-f]{96}$/.test(value)) throw new RangeError('each register is 48 bytes of hex')
  return bytesToHex(sha384(concatBytes(...values.map(hexToBytes))))
}

/** Options of {@link tdxQuoteVerifier}. */
export type TdxQuoteVerifierOptions = {
  /**
   * The trusted root CA certificate (PEM or DER). Default: Intel's SGX root CA. Security: only a
   * test may pass another root, such as the simulated enclave's.
   */
  rootCa?: string | Uint8Array | undefined
  /** The collateral quotes are checked with, or a function answering it for a quote. */
  collateral: TdxCollateral | ((quote: Uint8Array) => Promise<TdxCollateral>)
}

type Dcap = typeof import('@phala/dcap-qvl')

/**
 * `@phala/dcap-qvl`, loaded when a quote is first checked. The specifier is not a literal so that a
 * bundler for a Web runtime leaves it out: the package needs Node's `Buffer` and `crypto`, so TDX
 * quotes are checked on Node.js (the rest of the core runs anywhere).
 */
const dcapModule = '@phala/dcap-qvl'
const loadDcap = () => import(dcapModule) as Promise<Dcap>

/**
 * Hex SHA-256 of the DER of Intel's SGX root CA (dcap-qvl's `TRUSTED_ROOT_CA_DER`, which a test
 * checks it against): a policy's root is recognised as Intel's without loading the library.
 */
const intelRootSha256 = '44a0196b2b99f889b8e149e95b807a350e7424964399e885a7cbb8ccfab674d3'

/** Node's `Buffer` (the type dcap-qvl reads quotes as), or an error off Node. */
function nodeBuffer(): NativeBuffer {
  if (nativeBuffer === undefined) {
    throw new Error('TDX quotes are checked on Node.js (no Buffer here)')
  }
  return nativeBuffer
}

/** The length of the DER element at `at` and where its content starts, or undefined. */
function derElement(der: Uint8Array, at: number): { start: number; end: number } | undefined {
  const first = der[at + 1]
  if (first === undefined) return undefined
  let length = first
  let start = at + 2
  if (first & 0x80) {
    const count = first & 0x7f
    if (count === 0 || count > 3) return undefined
    length = 0
    for (let i = 0; i < count; i++) length = length * 256 + (der[start + i] ?? Number.NaN)
    start += count
  }
  const end = start + length
  return Number.isFinite(end) && end <= der.length ? { start, end } : undefined
}

/**
 * DER of a PEM or DER certificate; throws when it is not shaped as one (a SEQUENCE of the
 * to-be-signed SEQUENCE, the algorithm SEQUENCE and the signature BIT STRING, nothing after).
 * The chain itself is checked by dcap-qvl when a quote is verified.
 */
function certificateDer(value: string | Uint8Array): Uint8Array {
  let der: Uint8Array | undefined
  if (typeof value === 'string') {
    const body = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(
      value,
    )
    der = body?.[1] === undefined ? undefined : decodeBase64(body[1].replace(/\s+/g, ''))
  } else der = Uint8Array.from(value)
  const outer = der && der[0] === 0x30 ? derElement(der, 0) : undefined
  if (!der || !outer || outer.end !== der.length) throw new Error('not a certificate')
  let at = outer.start
  for (const tag of [0x30, 0x30, 0x03]) {
    const element = der[at] === tag ? derElement(der, at) : undefined
    if (!element) throw new Error('not a certificate')
    at = element.end
  }
  if (at !== der.length) throw new Error('not a certificate')
  return der
}

/**
 * A {@link QuoteVerifier} of Intel TDX quotes (v4/v5), checked by `@phala/dcap-qvl` with the given
 * collateral at the verification time (`now`). A quote that is not TDX, whose chain does not lead to
 * the root CA, or whose TCB status is Revoked is invalid.
 *
 * @example
 * ```ts
 * const verifier = tdxQuoteVerifier({ collateral }) // Intel's root CA
 * const tests = tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral })
 * ```
 */
export function tdxQuoteVerifier(options: TdxQuoteVerifierOptions): QuoteVerifier {
  const rootDer = options.rootCa === undefined ? undefined : certificateDer(options.rootCa)
  // Loaded and built on the first quote, then kept with this verifier (its root never changes).
  let built: Promise<InstanceType<Dcap['QuoteVerifier']>> | undefined
  const dcapVerifier = () => {
    built ??= loadDcap().then(({ QuoteVerifier: Dcap }) =>
      rootDer
        ? Dcap.newWithRootCa(nodeBuffer().from(rootDer) as Parameters<typeof Dcap.newWithRootCa>[0])
        : Dcap.newProd(),
    )
    // A failed load is tried again on the next quote.
    built.catch(() => {
      built = undefined
    })
    return built
  }
  return {
    teeType: TDX_TEE_TYPE,
    async verify(quote, verifyOptions): Promise<QuoteVerdict> {
      let tcbStatus: TcbStatus | undefined
      try {
        const verifier = await dcapVerifier()
        const Buffer = nodeBuffer()
        const collateral =
          typeof options.collateral === 'function'
            ? await options.collateral(quote)
            : options.collateral
        const nowSecs = Math.floor((verifyOptions?.now ?? Date.now()) / 1000)
        const verified = verifier.verify(
          Buffer.from(quote) as Parameters<typeof verifier.verify>[0],
          collateral,
          nowSecs,
        )
        const td = verified.report.asTd10()
        if (!td) return { status: 'invalid', reason: 'not a TDX quote' }
        const hex = (bytes: Uint8Array) => bytesToHex(Uint8Array.from(bytes))
        const registers: TdxRegisters = {
          mrtd: hex(td.mrTd),
          rtmr0: hex(td.rtMr0),
          rtmr1: hex(td.rtMr1),
          rtmr2: hex(td.rtMr2),
          rtmr3: hex(td.rtMr3),
        }
        tcbStatus = verified.status
        return {
          status: 'valid',
          measurement: tdxMeasurementOf(registers),
          reportData: Uint8Array.from(td.reportData),
          tcbStatus,
          registers,
        }
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'the quote did not verify'
        const status = /^TCB status is invalid: (\w+)$/.exec(reason)?.[1]
        return status === undefined
          ? { status: 'invalid', reason }
          : { status: 'invalid', reason, tcbStatus: status as TcbStatus }
      }
    },
  }
}

/** A TDX quote verifier as a gateway publishes it with a session (`policy.quote_verifier`). */
export const TdxVerifierPolicySchema = z.object({
  kind: z.literal('tdx'),
  /** PEM of the root CA; absent: Intel's. */
  root_ca: Pem.optional(),
  collateral: TdxCollateralSchema,
})
/** A TDX quote verifier as published with a session. */
export type TdxVerifierPolicy = z.infer<typeof TdxVerifierPolicySchema>

/**
 * The quote verifier a published policy describes, or why there is none. `pinnedRootSha256` (hex
 * SHA-256 of the root CA's DER; Intel's when the policy names none) refuses any other root.
 *
 * @example
 * ```ts
 * const verifier = quoteVerifierOfPolicy(session.policy.quote_verifier)
 * if ('error' in verifier) fail(verifier.error)
 * ```
 */
export async function quoteVerifierOfPolicy(
  policy: unknown,
  pinnedRootSha256?: string,
): Promise<QuoteVerifier | { error: string }> {
  const parsed = TdxVerifierPolicySchema.safeParse(policy)
  if (!parsed.success) return { error: 'the quote verifier policy is not a TDX policy' }
  const root = rootOfPolicy(parsed.data)
  if (root === undefined) return { error: 'the root CA is not a certificate' }
  if (pinnedRootSha256 !== undefined && root.sha256 !== pinnedRootSha256) {
    return { error: 'the root CA is not the pinned one' }
  }
  // Intel's root, named or not, is the library's own (`newProd`).
  return tdxQuoteVerifier({
    rootCa: root.intel ? undefined : root.der,
    collateral: parsed.data.collateral,
  })
}

/**
 * The root CA a TDX verifier policy names: its DER (absent: Intel's, the library's own), its
 * SHA-256 (hex) and whether it is Intel's.
 */
type PolicyRoot = { der: Uint8Array | undefined; sha256: string; intel: boolean }

function rootOfPolicy(policy: TdxVerifierPolicy): PolicyRoot | undefined {
  if (policy.root_ca === undefined) return { der: undefined, sha256: intelRootSha256, intel: true }
  let der: Uint8Array
  try {
    der = certificateDer(policy.root_ca)
  } catch {
    return undefined
  }
  const digest = bytesToHex(sha256(der))
  return { der, sha256: digest, intel: digest === intelRootSha256 }
}

/**
 * The root CA a published TDX verifier policy names (`policy.quote_verifier`): its SHA-256 (hex of
 * the DER) and whether it is Intel's SGX root; `undefined` when the policy is not a TDX policy or
 * its root is not a certificate. Any root that is not Intel's (the simulated enclave's) is a test
 * root: a quote under it proves nothing about the hardware.
 */
export async function publishedRootOf(
  policy: unknown,
): Promise<{ sha256: string; intel: boolean } | undefined> {
  const parsed = TdxVerifierPolicySchema.safeParse(policy)
  if (!parsed.success) return undefined
  const root = rootOfPolicy(parsed.data)
  return root === undefined ? undefined : { sha256: root.sha256, intel: root.intel }
}
