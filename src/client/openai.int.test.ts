/**
 * The official `openai` SDK, given the paying fetch, calls a paid OpenAI-style chat route on a local
 * seller (the paywall over the ledger emulator) and gets typed completions, buffered and streamed.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import type { ChatCompletion } from 'openai/resources/chat/completions'
import { describe, expect, it } from 'vitest'
import { hasCode } from '../errors.js'
import { createPayingFetch, paymentOf } from './fetch.js'
import { useSellers } from './testHelpers.js'

const sellers = useSellers()

function openaiWith(options: { maxPrice?: string; prefer?: 'x402' | 'mpp' } = {}) {
  const buyer = sellers.chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
  const pay = createPayingFetch({
    signer: buyer,
    ledger: sellers.chain.url,
    limits: { file: join(mkdtempSync(join(tmpdir(), 'tollgate-openai-')), 'spending.json') },
    ...options,
  })
  // maxRetries 0: the paying fetch already retries transient answers before paying; an SDK retry
  // after a paid call would be a new request, and so a new payment.
  const openai = new OpenAI({
    apiKey: 'not-needed-payment-is-the-credential',
    baseURL: `${sellers.base}/v1`,
    fetch: pay,
    maxRetries: 0,
  })
  return { openai, pay, buyer }
}

const messages = [{ role: 'user' as const, content: 'Say hello' }]

describe('openai SDK over the paying fetch', () => {
  it.each(['x402', 'mpp'] as const)(
    'gets a typed, buffered completion paid in %s',
    async (prefer) => {
      const { openai, buyer } = openaiWith({ maxPrice: '0.10', prefer })
      const before = await sellers.usdcOf(sellers.payTo)
      const { data, response } = await openai.chat.completions
        .create({ model: 'test-model', messages })
        .withResponse()
      const completion: ChatCompletion = data
      expect(completion.object).toBe('chat.completion')
      expect(completion.choices[0]?.message.content).toBe('Hello, buyer!')
      expect(paymentOf(response)).toMatchObject({
        dialect: prefer,
        amount: 50_000n,
        payer: buyer.toSuiAddress(),
      })
      expect(await sellers.usdcOf(sellers.payTo)).toBe(before + 50_000n)
    },
  )

  it('streams a paid completion chunk by chunk', async () => {
    const { openai, buyer } = openaiWith({ maxPrice: '0.10' })
    const stream = await openai.chat.completions.create({
      model: 'test-model',
      messages,
      stream: true,
    })
    const pieces: string[] = []
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk')
      const piece = chunk.choices[0]?.delta.content
      if (piece) pieces.push(piece)
    }
    expect(pieces).toEqual(['Hello', ', ', 'buyer', '!'])
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n - 50_000n)
  })

  it('surfaces a refusal as the SDK’s connection error with our code as the cause', async () => {
    const { openai, buyer } = openaiWith({ maxPrice: '0.01' })
    const error = await openai.chat.completions
      .create({ model: 'test-model', messages })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIConnectionError)
    expect(hasCode((error as Error).cause, 'PRICE_ABOVE_MAX')).toBe(true)
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n)
  })
})
