/**
 * The pure parts of confidential models: the reserved id prefix (a model with it must be a
 * confidential model on a confidential upstream, and the other way round), the configuration of a
 * confidential upstream, and the hold-back of a stream's final `[DONE]` event (everything else is
 * released at once, whatever the chunking).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createTestTdxPlatform } from '../../src/testing/enclave/index.js'
import { parseConfig } from '../config.js'
import { createHoldBack, modelOf } from './confidentialStream.js'
import { confidentialPrefixProblems, type ModelConfig, modelConfigSchema } from './models.js'

const platform = createTestTdxPlatform({ tcbStatus: 'UpToDate' })
const enclave = {
  kind: 'confidential',
  baseUrl: 'http://127.0.0.1:9/v1',
  quoteVerifier: { kind: 'tdx', rootCa: platform.rootCa, collateral: platform.collateral },
  allowedMeasurements: ['ab'.repeat(48)],
} as const
const open = { kind: 'openai-compatible', baseUrl: 'https://api.example/v1' } as const
const base = { pricing: { prompt: '1', completion: '1' }, contextWindow: 8192 }

describe('the reserved prefix', () => {
  const parse = (input: unknown) => modelConfigSchema.parse(input) as ModelConfig

  it('accepts a confidential model with the prefix on an enclave (refreshMs defaults to 60 s)', () => {
    const model = parse({
      ...base,
      id: 'confidential/m',
      privacy: 'confidential',
      upstream: enclave,
    })
    expect(model.upstream).toMatchObject({ kind: 'confidential', refreshMs: 60_000 })
    expect(confidentialPrefixProblems([model], 'confidential/')).toEqual([])
  })

  it('refuses the prefix on an open model, and a confidential model without it', () => {
    const openWithPrefix = parse({ ...base, id: 'confidential/m', upstream: open })
    const unprefixed = parse({ ...base, id: 'm', privacy: 'confidential', upstream: enclave })
    expect(confidentialPrefixProblems([openWithPrefix, unprefixed], 'confidential/')).toEqual([
      'model confidential/m: the prefix confidential/ is reserved for confidential models',
      "model m: a confidential model's id must start with confidential/",
    ])
  })

  it('refuses an enclave that serves an open tier, and an empty measurement allow-list', () => {
    expect(modelConfigSchema.safeParse({ ...base, id: 'x', upstream: enclave }).success).toBe(false)
    const noMeasurements = { ...enclave, allowedMeasurements: [] }
    expect(
      modelConfigSchema.safeParse({
        ...base,
        id: 'confidential/m',
        privacy: 'confidential',
        upstream: noMeasurements,
      }).success,
    ).toBe(false)
  })
})

describe('the quote and GPU verifier settings', () => {
  const model = (upstream: unknown) => ({
    ...base,
    id: 'confidential/m',
    privacy: 'confidential',
    upstream,
  })
  /** The one-line problems a gateway stops with at start. */
  const problems = (upstream: unknown) => {
    try {
      parseConfig({ inferenceModels: [model(upstream)] })
      return []
    } catch (error) {
      return String((error as Error).message)
        .split('\n')
        .filter((line) => line.includes('INFERENCE_MODELS'))
    }
  }

  it('accepts TDX with collateral (Intel root by default) and GPU evidence with NVIDIA by default', () => {
    const { rootCa: _, ...quoteVerifier } = enclave.quoteVerifier
    const parsed = modelConfigSchema.parse(model({ ...enclave, quoteVerifier, gpu: {} }))
    expect(parsed.upstream).toMatchObject({
      gpu: { jwksUrl: 'https://nras.attestation.nvidia.com/.well-known/jwks.json' },
    })
    expect(problems(enclave)).toEqual([])
  })

  it.each<[string, unknown, string]>([
    [
      'a root CA that is not a certificate',
      { ...enclave.quoteVerifier, rootCa: 'not a certificate' },
      'quoteVerifier.rootCa): must be a PEM certificate',
    ],
    ['no collateral', { kind: 'tdx', rootCa: platform.rootCa }, 'quoteVerifier.collateral'],
    [
      'expired collateral',
      {
        ...enclave.quoteVerifier,
        collateral: {
          ...platform.collateral,
          tcb_info: platform.collateral.tcb_info.replace(
            /"nextUpdate":"[^"]+"/,
            '"nextUpdate":"2020-01-01T00:00:00Z"',
          ),
        },
      },
      'quoteVerifier.collateral.tcb_info): has expired (nextUpdate)',
    ],
    [
      'the retired simulated verifier',
      { kind: 'simulated', rootPublicKey: '00'.repeat(32) },
      'quoteVerifier.kind',
    ],
  ])('stops the gateway with one line naming the setting on %s', (_, quoteVerifier, named) => {
    const lines = problems({ ...enclave, quoteVerifier })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`INFERENCE_MODELS (inferenceModels.0.upstream.${named}`)
  })

  it('stops the gateway on a GPU JWKS URL that is not http(s)', () => {
    const lines = problems({ ...enclave, gpu: { jwksUrl: 'file:///etc/jwks.json' } })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('INFERENCE_MODELS (inferenceModels.0.upstream.gpu.jwksUrl)')
  })
})

const done = 'data: [DONE]\n\n'
const bytes = (text: string) => new TextEncoder().encode(text)

/** Feeds `chunks` through the relay's hold-back; answers what was released early and held. */
function run(chunks: string[]): { released: string; held: string } {
  const holdBack = createHoldBack()
  const decoder = new TextDecoder()
  let released = ''
  for (const chunk of chunks) released += decoder.decode(holdBack.push(bytes(chunk)))
  return { released, held: decoder.decode(holdBack.held()) }
}

describe('the [DONE] hold-back', () => {
  const events = ['data: {"a":1}\n\n', ': keep-alive\n\n', 'data: {"b":"x\\n"}\n\n']

  it('holds back only the final data: [DONE] event', () => {
    expect(run([...events, done])).toEqual({ released: events.join(''), held: done })
    expect(run([events.join('') + done])).toEqual({ released: events.join(''), held: done })
    expect(run(events)).toEqual({ released: events.join(''), held: '' })
  })

  it('releases every other byte, however the stream is cut into chunks', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...events), { maxLength: 6 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
        (list, withDone, sizes) => {
          const text = list.join('') + (withDone ? done : '')
          const chunks: string[] = []
          for (let i = 0, k = 0; i < text.length; k++) {
            const size = sizes[k % sizes.length] ?? 1
            chunks.push(text.slice(i, i + size))
            i += size
          }
          const { released, held } = run(chunks)
          expect(released + held).toBe(text)
          expect(released).toBe(list.join(''))
          expect(held).toBe(withDone ? done : '')
        },
      ),
    )
  })
})

describe('modelOf', () => {
  it('reads the model an answer names, up to 256 characters, and nothing else', () => {
    expect(modelOf('{"model":"m-1","choices":[]}')).toBe('m-1')
    expect(modelOf(new TextEncoder().encode(`{"model":"${'m'.repeat(256)}"}`))).toHaveLength(256)
    // A longer name is not read as a model name.
    expect(modelOf(`{"model":"${'m'.repeat(257)}"}`)).toBeUndefined()
    expect(modelOf('{"model":7}')).toBeUndefined()
    expect(modelOf('[1]')).toBeUndefined()
    expect(modelOf('not json')).toBeUndefined()
  })
})
