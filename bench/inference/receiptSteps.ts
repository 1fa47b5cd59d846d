/**
 * `npx tsx bench/inference/receiptSteps.ts`: what each step of verifying the first receipt of a
 * session costs, without the network. Starts the simulated enclave, the model server and the
 * benchmark's gateway (`enclave.ts`, `model.ts`, `server.ts`; the confidential model attests before
 * every request, so two answers are of two sessions), gets two confidential answers anchored,
 * fetches every document the verifier reads once, then times, `BENCH_STEPS` rounds each (default
 * 200, after 30 warm-up rounds; the steps' rounds first, then the wholes' own), the median of:
 *
 * - each step of the cold path on its own: reading the documents (JSON + schema), building the
 *   quote verifier of the published policy, the keys of the verifier's caches (sha256 of the
 *   policy JSON and of the report's JCS), the DCAP quote check (one `@phala/dcap-qvl` call) and,
 *   under it, the parts of its work the library redoes on every call (timed by calling its exported
 *   helpers the way it does: they are not separable in production), the rest of `verifyReport`, the
 *   receipt signature, and the gateway receipt's JWS with and without importing its JWKS;
 * - the whole: the one-shot `verifyInferenceReceipt` (nothing known: the cold path), and a
 *   long-lived verifier's first receipt of a session after it verified a receipt of another
 *   session under the same published policy (a fresh verifier each round); with
 *   `BENCH_BASE=<another checkout>` also both wholes by that checkout's `src/`, in the same rounds
 *   (a before/after that load changes during the run affect alike).
 *
 * Prints a markdown table (ms) and the load average.
 */
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import * as dcap from '@phala/dcap-qvl'
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'
import { Attestation, createLedger, type Ledger } from '../../src/index.js'
import type { LookupOutcome } from '../../src/ledger/types.js'
import { startScript } from '../script.js'

const rounds = Number(process.env.BENCH_STEPS ?? 200)
const warmRounds = 30

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 0
    ? ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
    : (sorted[mid] as number)
}

console.error(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
const model = await startScript<{ baseUrl: string }>(new URL('./model.ts', import.meta.url))
const enclave = await startScript<{ model: { id: string; upstream: { baseUrl: string } } }>(
  new URL('./enclave.ts', import.meta.url),
)
const gateway = await startScript<{ url: string; key: string }>(
  new URL('./server.ts', import.meta.url),
  {
    MODEL_URL: model.info.baseUrl,
    CONFIDENTIAL_MODEL: JSON.stringify({
      ...enclave.info.model,
      upstream: { ...enclave.info.model.upstream, refreshMs: 0 },
    }),
  },
  true,
)
try {
  const { url, key } = gateway.info
  /** One confidential answer, anchored; answers its receipt id. */
  const anchoredAnswer = async (): Promise<string> => {
    const answer = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: enclave.info.model.id,
        messages: [{ role: 'user', content: 'Say hello in one sentence.' }],
        stream: true,
      }),
    })
    await answer.text()
    const id = answer.headers.get('x-receipt-id')
    if (answer.status !== 200 || id === null) throw new Error(`confidential call ${answer.status}`)
    for (let round = 0; ; round++) {
      const anchored = await fetch(`${url}/v1/aci/anchor/${id}`, { method: 'POST' })
      if (anchored.status === 200) return id
      if (round === 600) throw new Error(`anchor ${anchored.status}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  // The model attests before every request: the two answers are of two sessions.
  const id = await anchoredAnswer()
  const other = await anchoredAnswer()

  // Every document the verifier reads, fetched once; the ledger's answers remembered.
  const documents = new Map<string, string>()
  const remember = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init)
    documents.set(String(input), await response.text())
    return new Response(documents.get(String(input)), { status: response.status })
  }
  const health = (await (await fetch(`${url}/healthz`)).json()) as { ledger: { url: string } }
  const onLedger = createLedger({ url: health.ledger.url })
  const transactions = new Map<string, LookupOutcome>()
  const ledger: Pick<Ledger, 'getTransaction'> = {
    async getTransaction(digest) {
      const found = transactions.get(digest) ?? (await onLedger.getTransaction(digest))
      transactions.set(digest, found)
      return found
    },
  }
  const options = { inferenceUrl: url, ledger, allowTestRoot: true }
  const first = await Attestation.verifyInferenceReceipt(id, { ...options, fetch: remember })
  if (first.status !== 'verified') throw new Error(`receipt not verified: ${first.code}`)
  const second = await Attestation.verifyInferenceReceipt(other, { ...options, fetch: remember })
  if (second.status !== 'verified') throw new Error(`receipt not verified: ${second.code}`)
  const inMemory = (async (input: string | URL | Request) => {
    const text = documents.get(String(input))
    return text === undefined ? new Response('', { status: 404 }) : new Response(text)
  }) as typeof fetch

  const receiptText = documents.get(`${url}/v1/aci/receipts/${id}`) ?? ''
  const stored = Attestation.StoredReceiptDocumentSchema.parse(JSON.parse(receiptText))
  const sessionText =
    documents.get(`${url}/v1/aci/sessions/${encodeURIComponent(stored.session_id)}`) ?? ''
  const session = Attestation.StoredSessionDocumentSchema.parse(JSON.parse(sessionText))
  const jwksText = documents.get(`${url}/.well-known/tollgate-receipt-keys.json`) ?? ''
  const anchorText = documents.get(`${url}/v1/aci/anchor/${id}`) ?? ''
  const quoteVerifier = await Attestation.publishedQuoteVerifier(session.policy)
  if (quoteVerifier === undefined || 'error' in quoteVerifier) throw new Error('no verifier')
  const report = session.report as { attestation: { evidence: { quote: string } } }
  const quote = Buffer.from(report.attestation.evidence.quote, 'hex')
  const now = Date.parse(session.attested_at)
  const nowSecs = Math.floor(now / 1000)
  const quoteVerdict = await quoteVerifier.verify(quote, { now })
  if (quoteVerdict.status !== 'valid') throw new Error(quoteVerdict.reason)
  const policy = session.policy.quote_verifier as Attestation.TdxVerifierPolicy
  const collateral = policy.collateral as Attestation.TdxCollateral & Record<string, string>
  const rootDer = dcap.utils.extractCerts(Buffer.from(policy.root_ca ?? '', 'utf8'))[0] as Buffer
  const dcapVerifier = dcap.QuoteVerifier.newWithRootCa(rootDer)
  const crls = [
    Buffer.from(collateral.root_ca_crl as string, 'hex'),
    Buffer.from(collateral.pck_crl as string, 'hex'),
  ]
  const chains = [collateral.tcb_info_issuer_chain, collateral.qe_identity_issuer_chain].map(
    (pem) => dcap.utils.extractCerts(Buffer.from(pem as string)),
  )
  const parsedQuote = dcap.Quote.parse(quote)
  const pckChain = dcap.utils.extractCerts(
    Buffer.from(parsedQuote.authData.intoV3().certificationData.body),
  )
  const verified = await Attestation.verifyReport(session.report, {
    nonce: session.nonce,
    quoteVerifier,
    allowedMeasurements: session.policy.allowed_measurements ?? [],
    now,
  })
  if (verified.status !== 'verified') throw new Error(verified.code)
  const jws = stored.gateway_receipt as string
  const { createHash, X509Certificate, createVerify, createPublicKey } = await import('node:crypto')
  const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')

  /** The two whole checks, by the given copy of the package's attestation namespace. */
  const wholes = (label: string, A: typeof Attestation): [string, () => unknown][] => [
    [
      `whole${label}: one-shot verifyInferenceReceipt (cold)`,
      async () => {
        const result = await A.verifyInferenceReceipt(id, { ...options, fetch: inMemory })
        if (result.status !== 'verified') throw new Error(result.code)
      },
    ],
    [
      `whole${label}: first receipt of a session, verifier that has verified one of another session`,
      async () => {
        const verifier = A.createInferenceReceiptVerifier({ ...options, fetch: inMemory })
        if ((await verifier.verify(id)).status !== 'verified') throw new Error('not verified')
        const started = performance.now()
        const result = await verifier.verify(other)
        const ms = performance.now() - started
        if (result.status !== 'verified') throw new Error(result.code)
        if (result.steps[2]?.reused !== false) throw new Error('the session was known')
        return ms
      },
    ],
  ]
  // Another checkout (its `src/`), timed in the same rounds: a before/after robust to load drift.
  const base =
    process.env.BENCH_BASE === undefined
      ? undefined
      : (
          (await import(pathToFileURL(join(process.env.BENCH_BASE, 'src/index.ts')).href)) as {
            Attestation: typeof Attestation
          }
        ).Attestation

  // Each step, as the cold path does it (the library's per-call work through its exported helpers).
  const steps: [string, () => unknown][] = [
    [
      'read documents (JSON + schema: receipt, session, anchor, JWKS)',
      () => {
        Attestation.StoredReceiptDocumentSchema.parse(JSON.parse(receiptText))
        Attestation.StoredSessionDocumentSchema.parse(JSON.parse(sessionText))
        Attestation.AnchorDocumentSchema.parse(JSON.parse(anchorText))
        JSON.parse(jwksText)
      },
    ],
    [
      'build the quote verifier of the published policy (schema of the collateral, root CA)',
      () => Attestation.publishedQuoteVerifier(session.policy),
    ],
    [
      'cache keys: sha256 of the policy JSON, of the report JCS',
      () => {
        sha256(JSON.stringify(session.policy))
        sha256(Attestation.jcsBytes(session.report))
      },
    ],
    [
      'DCAP quote check (one dcap-qvl `verify` call)',
      () => dcapVerifier.verify(quote, collateral as dcap.Collateral, nowSecs),
    ],
    ['  in it: parse the quote', () => dcap.Quote.parse(quote)],
    [
      '  in it: parse TCB info + QE identity JSON',
      () => {
        dcap.TcbInfo.fromJSON(collateral.tcb_info)
        JSON.parse(collateral.qe_identity)
      },
    ],
    [
      '  in it: hex-decode the two CRLs',
      () => {
        Buffer.from(collateral.root_ca_crl as string, 'hex')
        Buffer.from(collateral.pck_crl as string, 'hex')
      },
    ],
    [
      '  in it: ASN.1-decode a CRL × 20 (2 CRLs × 10 certificates looked up)',
      () => {
        for (let i = 0; i < 10; i++)
          for (const crl of crls) dcap.utils.CertificateList.decode(crl, 'der')
      },
    ],
    [
      '  in it: ASN.1-decode a certificate × 10 (serials for the CRL look-ups)',
      () => {
        for (let i = 0; i < 10; i++) dcap.utils.Certificate.decode(rootDer, 'der')
      },
    ],
    [
      '  in it: three chains: X509 parse + signature check per link (4 of its 7 links)',
      () => {
        for (const chain of [...chains, pckChain]) {
          const certs = [...chain.slice(0, -1), rootDer]
          for (let i = 0; i + 1 < certs.length; i++) {
            const cert = new X509Certificate(dcap.utils.derToPem(certs[i] as Buffer, 'CERTIFICATE'))
            const issuer = new X509Certificate(
              dcap.utils.derToPem(certs[i + 1] as Buffer, 'CERTIFICATE'),
            )
            cert.verify(issuer.publicKey)
          }
        }
      },
    ],
    [
      '  in it: four ECDSA P-256 signatures (TCB info, QE identity, QE report, quote)',
      () => {
        const signingCert = new X509Certificate(
          dcap.utils.derToPem(chains[0]?.[0] as Buffer, 'CERTIFICATE'),
        )
        const signature = dcap.utils.encodeAsDer(
          Buffer.from(collateral.tcb_info_signature as string, 'hex'),
        )
        for (const data of [
          collateral.tcb_info,
          collateral.qe_identity,
          collateral.tcb_info,
          'x',
        ]) {
          const key = createPublicKey(signingCert.publicKey.export({ format: 'pem', type: 'spki' }))
          createVerify('SHA256').update(data).verify(key, signature)
        }
      },
    ],
    [
      '  in it: PCK extension (FMSPC, CPUSVN, PCESVN) ASN.1',
      () => {
        const extension = dcap.utils.getIntelExtension(pckChain[0] as Buffer)
        dcap.utils.getCpuSvn(extension)
        dcap.utils.getPceSvn(extension)
        dcap.utils.getFmspc(extension)
        try {
          dcap.intel.parsePckExtension(pckChain[0] as Buffer) // the library ignores its failure
        } catch {}
      },
    ],
    [
      'the rest of verifyReport (schema, keyset, endorsement, nonce, allow-list; quote verdict given)',
      () =>
        Attestation.verifyReport(session.report, {
          nonce: session.nonce,
          quoteVerifier: { teeType: quoteVerifier.teeType, verify: async () => quoteVerdict },
          allowedMeasurements: session.policy.allowed_measurements ?? [],
          now,
        }),
    ],
    [
      'receipt signature (verifyReceipt)',
      () =>
        Attestation.verifyReceipt(stored.receipt, {
          receiptKeys: verified.receiptKeys,
          workloadId: verified.workloadId,
          keysetDigest: verified.keysetDigest,
        }),
    ],
    [
      'gateway receipt: import the JWKS + verify the JWS',
      () =>
        jwtVerify(jws, createLocalJWKSet(JSON.parse(jwksText) as JSONWebKeySet), {
          typ: 'tollgate-receipt+jwt',
          algorithms: ['EdDSA'],
        }),
    ],
    [
      'gateway receipt: verify the JWS, JWKS imported once',
      (() => {
        const keys = createLocalJWKSet(JSON.parse(jwksText) as JSONWebKeySet)
        return () => jwtVerify(jws, keys, { typ: 'tollgate-receipt+jwt', algorithms: ['EdDSA'] })
      })(),
    ],
  ]
  // The wholes in rounds of their own, after the steps: each round runs every whole once, in turn.
  const whole = [
    ...wholes('', Attestation),
    ...(base === undefined ? [] : wholes(' — BENCH_BASE', base)),
  ]
  const timed = async (group: [string, () => unknown][]) => {
    for (let i = 0; i < warmRounds; i++) for (const [, run] of group) await run()
    const times = group.map(() => [] as number[])
    for (let i = 0; i < rounds; i++) {
      for (const [index, [, run]] of group.entries()) {
        const started = performance.now()
        const own = await run()
        // A step that times itself answers its own ms.
        times[index]?.push(typeof own === 'number' ? own : performance.now() - started)
      }
    }
    return group.map(([name], index) => `| ${name} | ${median(times[index] ?? []).toFixed(3)} |`)
  }
  const lines = [...(await timed(steps)), ...(await timed(whole))]
  console.log(`| step (${rounds} rounds, median) | ms |`)
  console.log('| --- | --- |')
  for (const line of lines) console.log(line)
  console.error(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
} finally {
  gateway.process.kill('SIGTERM')
  model.process.kill('SIGTERM')
  enclave.process.kill('SIGTERM')
}
