/**
 * Keyed calls' reservations end to end, on a gateway whose model answers slowly (the model server
 * of `tollgate/testing` with a latency), so that calls overlap: parallel calls never reserve more
 * than the credit (exactly as many as it covers are served), a call that runs longer than its
 * reservation's lease keeps it (renewed) and is charged, a reservation left by a process that died
 * mid-call is given back by the sweeper once its lease lapsed, and the keyless route's `max_tokens`
 * cap is the model's output cap when that is lower.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ModelUpstream, startModelUpstream } from '../../src/testing/index.js'
import { useTestGateway } from '../server/testHelpers.js'
import { tokenCost } from './pricing.js'
import { estimatePromptTokens } from './request.js'
import { spentBy } from './testHelpers.js'

const model = 'slow-model'
const messages = [{ role: 'user' as const, content: 'Say hello' }]
const pricing = { promptPerMillion: 500_000n, completionPerMillion: 1_000_000n }
const maxTokens = 2_000
const reservation = tokenCost(pricing, {
  promptTokens: estimatePromptTokens(messages),
  completionTokens: maxTokens,
})
const latencyMs = 1_500

let upstream: ModelUpstream
beforeAll(async () => {
  upstream = await startModelUpstream({ latencyMs })
})
afterAll(async () => {
  await upstream?.stop()
})

const gateway = useTestGateway(() => ({
  config: {
    inferenceModels: [
      {
        id: model,
        pricing: { prompt: '0.5', completion: '1' },
        contextWindow: 8_192,
        maxOutputTokens: maxTokens,
        upstream: { kind: 'openai-compatible', baseUrl: upstream.baseUrl },
      },
    ] as never,
    // A reservation's lease is shorter than a call: it must be renewed while the call runs.
    serveLeaseMs: 1_000,
    leaseSweepIntervalMs: 100,
  },
}))

async function creditOf(id: string): Promise<bigint> {
  return (await gateway.inference.keys.get(id))?.credit ?? -1n
}

function chat(key: string) {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages }),
  })
}

describe('reservations of keyed calls', () => {
  it('30 parallel calls on a credit that covers 12 reservations: exactly 12 served, none overdraws', async () => {
    const credit = 12n * reservation + reservation / 2n
    const { id, key } = await gateway.inference.keys.create({ credit })
    const answers = await Promise.all(Array.from({ length: 30 }, () => chat(key)))
    const served = answers.filter((a) => a.status === 200)
    expect(served).toHaveLength(12)
    expect(answers.filter((a) => a.status === 402)).toHaveLength(18)
    const spent = await spentBy(pricing, served)
    // Each served call kept its usage's cost and gave the rest of its reservation back.
    expect(await creditOf(id)).toBe(credit - spent)
    const calls = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(calls.map((e) => e.state)).toEqual(Array(12).fill('served'))
    expect(calls.reduce((sum, e) => sum + e.amount, 0n)).toBe(spent)
  })

  it('a call longer than the lease keeps its reservation (renewed) and is charged', async () => {
    const { id, key } = await gateway.inference.keys.create({ credit: 10n * reservation })
    const answer = await chat(key)
    expect(answer.status).toBe(200)
    const cost = await spentBy(pricing, [answer])
    expect(cost).toBeGreaterThan(0n)
    expect(await creditOf(id)).toBe(10n * reservation - cost)
    const [call] = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(call).toMatchObject({ state: 'served', amount: cost })
  })

  it('the keyless route caps max_tokens at the model’s output cap too, before any payment', async () => {
    const keyless = (max_tokens: number) =>
      fetch(`${gateway.url}/open/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages, max_tokens }),
      })
    const over = await keyless(maxTokens + 1)
    expect(over.status).toBe(400)
    expect(JSON.stringify(await over.json())).toContain(`must be at most ${maxTokens}`)
    expect((await keyless(maxTokens)).status).toBe(402)
  })

  it('gives back a reservation whose lease lapsed (its process died mid-call)', async () => {
    const { id } = await gateway.inference.keys.create({ credit: 5_000n })
    // What a process that died after reserving leaves behind: a reservation nobody renews.
    await gateway.inference.keys.reserve(id, 3_000n, {
      entryId: `call_${id}_crashed`,
      model,
      leaseUntilMs: Date.now() + 200,
    })
    expect(await creditOf(id)).toBe(2_000n)
    const deadline = Date.now() + 5_000
    while ((await creditOf(id)) !== 5_000n && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await creditOf(id)).toBe(5_000n)
    const [call] = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(call?.state).toBe('restored')
  })
})
