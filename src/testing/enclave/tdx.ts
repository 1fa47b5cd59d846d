/**
 * A test Intel TDX platform for the simulated enclave: a test PKI shaped like Intel's (root CA →
 * PCK platform CA → PCK certificate with the SGX extension; root CA → TCB signing certificate), DCAP
 * collateral signed under it (TCB info and QE identity JSON, CRLs), and structurally real TDX v4
 * quotes: TD report body signed by a P-256 attestation key, QE report binding that key and signed
 * by the PCK key, PCK chain embedded (certification data type 6 → 5). `@phala/dcap-qvl` given the
 * test root CA accepts them. Nothing here involves hardware.
 *
 * @module
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto'
import type { TcbStatus } from '../../attestation/quote.js'
import type { TdxCollateral, TdxRegisters } from '../../attestation/tdx.js'
import {
  bits,
  bool,
  concat,
  enumerated,
  explicit,
  int,
  octets,
  oid,
  seq,
  set,
  time,
  utf8,
} from './der.js'

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'))
const SGX = '1.2.840.113741.1.13.1'
const INTEL_QE_VENDOR_ID = Buffer.from('939a7233f79c4ca9940a0db3957f0607', 'hex')
const FMSPC = Buffer.from('00806f050000', 'hex')
const PCE_ID = Buffer.from('0000', 'hex')
const PCE_SVN = 13
const CPU_SVN = Uint8Array.from([2, 2, 2, 2, 3, 1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0])
const TEE_TCB_SVN = Uint8Array.from([5, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
const QE_MRSIGNER = createHash('sha256').update('tollgate test quoting enclave signer').digest()
const QE_PROD_ID = 2
const QE_SVN = 4
const DAY = 86_400_000

const p256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' })
const raw = (signature: Buffer) => new Uint8Array(signature)
const signP1363 = (key: KeyObject, data: Uint8Array) =>
  raw(sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' }))

function name(commonName: string): Uint8Array {
  return seq(
    set(seq(oid('2.5.4.3'), utf8(commonName))),
    set(seq(oid('2.5.4.10'), utf8('Tollgate Test PKI (not Intel)'))),
  )
}

function certificate(fields: {
  issuer: string
  subject: string
  publicKey: KeyObject
  signer: KeyObject
  ca: boolean
  notBefore: Date
  notAfter: Date
  extensions?: readonly Uint8Array[]
}): Uint8Array {
  const spki = new Uint8Array(fields.publicKey.export({ format: 'der', type: 'spki' }))
  const basicConstraints = seq(
    oid('2.5.29.19'),
    bool(true),
    octets(fields.ca ? seq(bool(true)) : seq()),
  )
  const tbs = seq(
    explicit(0, int(2)),
    int(randomBytes(16)),
    ECDSA_SHA256,
    name(fields.issuer),
    seq(time(fields.notBefore), time(fields.notAfter)),
    name(fields.subject),
    spki,
    explicit(3, seq(basicConstraints, ...(fields.extensions ?? []))),
  )
  const signature = sign('sha256', tbs, { key: fields.signer, dsaEncoding: 'der' })
  return seq(tbs, ECDSA_SHA256, bits(new Uint8Array(signature)))
}

function crl(issuer: string, signer: KeyObject, thisUpdate: Date, nextUpdate: Date): Uint8Array {
  const tbs = seq(int(1), ECDSA_SHA256, name(issuer), time(thisUpdate), time(nextUpdate))
  const signature = sign('sha256', tbs, { key: signer, dsaEncoding: 'der' })
  return seq(tbs, ECDSA_SHA256, bits(new Uint8Array(signature)))
}

/** The SGX extension of a PCK certificate (PPID, TCB with CPUSVN/PCESVN, PCEID, FMSPC, type). */
function sgxExtension(): Uint8Array {
  const tcb = seq(
    ...Array.from(CPU_SVN, (svn, i) => seq(oid(`${SGX}.2.${i + 1}`), int(svn))),
    seq(oid(`${SGX}.2.17`), int(PCE_SVN)),
    seq(oid(`${SGX}.2.18`), octets(CPU_SVN)),
  )
  const value = seq(
    seq(oid(`${SGX}.1`), octets(randomBytes(16))),
    seq(oid(`${SGX}.2`), tcb),
    seq(oid(`${SGX}.3`), octets(PCE_ID)),
    seq(oid(`${SGX}.4`), octets(FMSPC)),
    seq(oid(`${SGX}.5`), enumerated(0)),
  )
  return seq(oid(SGX), octets(value))
}

const pem = (der: Uint8Array) =>
  `-----BEGIN CERTIFICATE-----\n${(
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n')}\n-----END CERTIFICATE-----\n`

const u16 = (n: number) => Uint8Array.of(n & 0xff, (n >> 8) & 0xff)
const u32 = (n: number) => {
  const out = new Uint8Array(4)
  new DataView(out.buffer).setUint32(0, n, true)
  return out
}
const sha384 = (label: string) => createHash('sha384').update(label).digest()

/** What a simulated TD quote attests (48-byte registers, 64 bytes of report data). */
export type TdQuoteFields = {
  registers: { mrtd: Uint8Array; rtmr: readonly [Uint8Array, Uint8Array, Uint8Array, Uint8Array] }
  reportData: Uint8Array
  /** Corrupt the quote's signature (a bad quote). */
  badSignature?: boolean | undefined
}

/** A test TDX platform: its root CA, its collateral and a quote signer. */
export type TestTdxPlatform = {
  /** The test root CA certificate (PEM): give it to `tdxQuoteVerifier` as `rootCa`. */
  rootCa: string
  /** DCAP collateral signed under the test root, valid for 30 days from creation. */
  collateral: TdxCollateral
  /** A TDX v4 quote of the given fields. */
  quote(fields: TdQuoteFields): Uint8Array
}

/** The registers of a quote as hex (for `tdxMeasurementOf`). */
export function registersHex(registers: TdQuoteFields['registers']): TdxRegisters {
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')
  const [rtmr0, rtmr1, rtmr2, rtmr3] = registers.rtmr.map(hex)
  return {
    mrtd: hex(registers.mrtd),
    rtmr0: rtmr0 ?? '',
    rtmr1: rtmr1 ?? '',
    rtmr2: rtmr2 ?? '',
    rtmr3: rtmr3 ?? '',
  }
}

/** Registers of a simulated workload named `label`. */
export function simulatedRegisters(label: string): TdQuoteFields['registers'] {
  return {
    mrtd: sha384(`${label} mrtd`),
    rtmr: [
      sha384(`${label} rtmr0`),
      sha384(`${label} rtmr1`),
      sha384(`${label} rtmr2`),
      sha384(`${label} rtmr3`),
    ],
  }
}

/**
 * Creates a test TDX platform: keys, certificates and collateral (the TCB level and QE identity
 * report `tcbStatus`).
 */
export function createTestTdxPlatform(options: { tcbStatus: TcbStatus }): TestTdxPlatform {
  const now = Date.now()
  const notBefore = new Date(now - DAY)
  const notAfter = new Date(now + 3650 * DAY)
  const root = p256()
  const platformCa = p256()
  const pck = p256()
  const tcbSigning = p256()
  const attestationKey = p256()
  const rootName = 'Tollgate Test SGX Root CA'
  const platformName = 'Tollgate Test SGX PCK Platform CA'
  const rootDer = certificate({
    issuer: rootName,
    subject: rootName,
    publicKey: root.publicKey,
    signer: root.privateKey,
    ca: true,
    notBefore,
    notAfter,
  })
  const platformDer = certificate({
    issuer: rootName,
    subject: platformName,
    publicKey: platformCa.publicKey,
    signer: root.privateKey,
    ca: true,
    notBefore,
    notAfter,
  })
  const pckDer = certificate({
    issuer: platformName,
    subject: 'Tollgate Test SGX PCK Certificate',
    publicKey: pck.publicKey,
    signer: platformCa.privateKey,
    ca: false,
    notBefore,
    notAfter,
    extensions: [sgxExtension()],
  })
  const tcbDer = certificate({
    issuer: rootName,
    subject: 'Tollgate Test SGX TCB Signing',
    publicKey: tcbSigning.publicKey,
    signer: root.privateKey,
    ca: false,
    notBefore,
    notAfter,
  })
  const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`
  const issueDate = iso(now - 3_600_000)
  const nextUpdate = iso(now + 30 * DAY)
  const svns = (values: Uint8Array) => Array.from(values, (svn) => ({ svn }))
  const tcbInfo = JSON.stringify({
    id: 'TDX',
    version: 3,
    issueDate,
    nextUpdate,
    fmspc: FMSPC.toString('hex'),
    pceId: PCE_ID.toString('hex'),
    tcbType: 0,
    tcbEvaluationDataNumber: 17,
    tdxModule: {
      mrsigner: '0'.repeat(96),
      attributes: '0000000000000000',
      attributesMask: 'FFFFFFFFFFFFFFFF',
    },
    tcbLevels: [
      {
        tcb: {
          sgxtcbcomponents: svns(CPU_SVN),
          pcesvn: PCE_SVN,
          tdxtcbcomponents: svns(TEE_TCB_SVN),
        },
        tcbDate: issueDate,
        tcbStatus: options.tcbStatus,
      },
    ],
  })
  const qeIdentity = JSON.stringify({
    id: 'TD_QE',
    version: 2,
    issueDate,
    nextUpdate,
    tcbEvaluationDataNumber: 17,
    miscselect: '00000000',
    miscselectMask: 'FFFFFFFF',
    attributes: '11000000000000000000000000000000',
    attributesMask: 'FBFFFFFFFFFFFFFF0000000000000000',
    mrsigner: QE_MRSIGNER.toString('hex').toUpperCase(),
    isvprodid: QE_PROD_ID,
    tcbLevels: [{ tcb: { isvsvn: QE_SVN }, tcbDate: issueDate, tcbStatus: 'UpToDate' }],
  })
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')
  const text = new TextEncoder()
  const collateral: TdxCollateral = {
    pck_crl_issuer_chain: pem(platformDer) + pem(rootDer),
    root_ca_crl: hex(crl(rootName, root.privateKey, new Date(now - DAY), new Date(now + 30 * DAY))),
    pck_crl: hex(
      crl(platformName, platformCa.privateKey, new Date(now - DAY), new Date(now + 30 * DAY)),
    ),
    tcb_info_issuer_chain: pem(tcbDer) + pem(rootDer),
    tcb_info: tcbInfo,
    tcb_info_signature: hex(signP1363(tcbSigning.privateKey, text.encode(tcbInfo))),
    qe_identity_issuer_chain: pem(tcbDer) + pem(rootDer),
    qe_identity: qeIdentity,
    qe_identity_signature: hex(signP1363(tcbSigning.privateKey, text.encode(qeIdentity))),
  }

  // The QE report binds the attestation key (sha256(key ‖ auth data)) and is signed by the PCK key.
  const jwk = attestationKey.publicKey.export({ format: 'jwk' })
  const keyBytes = concat(
    Buffer.from(jwk.x ?? '', 'base64url'),
    Buffer.from(jwk.y ?? '', 'base64url'),
  )
  const qeAuthData = Uint8Array.from({ length: 32 }, (_, i) => i)
  const qeReport = concat(
    CPU_SVN,
    u32(0), // MISCSELECT
    new Uint8Array(28),
    Uint8Array.of(0x11, ...new Uint8Array(15)), // ATTRIBUTES (not debug)
    createHash('sha256').update('tollgate test quoting enclave').digest(), // MRENCLAVE
    new Uint8Array(32),
    QE_MRSIGNER,
    new Uint8Array(96),
    u16(QE_PROD_ID),
    u16(QE_SVN),
    new Uint8Array(60),
    createHash('sha256').update(keyBytes).update(qeAuthData).digest(),
    new Uint8Array(32),
  )
  const chain = text.encode(pem(pckDer) + pem(platformDer) + pem(rootDer))
  const qeCertificationData = concat(
    qeReport,
    signP1363(pck.privateKey, qeReport),
    u16(qeAuthData.byteLength),
    qeAuthData,
    u16(5), // PCK certificate chain
    u32(chain.byteLength),
    chain,
  )

  return {
    rootCa: pem(rootDer),
    collateral,
    quote(fields) {
      const { mrtd, rtmr } = fields.registers
      if (fields.reportData.byteLength !== 64) throw new RangeError('report data must be 64 bytes')
      const header = concat(
        u16(4), // version
        u16(2), // ECDSA-256 with P-256
        u32(0x81), // TDX
        u16(0),
        u16(0),
        INTEL_QE_VENDOR_ID,
        new Uint8Array(20),
      )
      const body = concat(
        TEE_TCB_SVN,
        sha384('tollgate test TDX module'), // MRSEAM
        new Uint8Array(48), // MRSIGNERSEAM
        new Uint8Array(8), // SEAMATTRIBUTES
        Uint8Array.of(0, 0, 0, 0x10, 0, 0, 0, 0), // TDATTRIBUTES: SEPT_VE_DISABLE, not debug
        Uint8Array.of(0xe7, 0x18, 0x06, 0, 0, 0, 0, 0), // XFAM
        mrtd,
        new Uint8Array(48 * 3), // MRCONFIGID, MROWNER, MROWNERCONFIG
        ...rtmr,
        fields.reportData,
      )
      const signature = signP1363(attestationKey.privateKey, concat(header, body))
      if (fields.badSignature) signature[0] = (signature[0] ?? 0) ^ 0xff
      const authData = concat(
        signature,
        keyBytes,
        u16(6), // QE report certification data
        u32(qeCertificationData.byteLength),
        qeCertificationData,
      )
      return concat(header, body, u32(authData.byteLength), authData)
    },
  }
}
