/**
 * The session benchmark's unpaid baseline, on the embedded gateway (sessions on): the requests the
 * pass-through picks are served by the same routes without payment, after the same body checks
 * (400, 413); the keyless route serves them its plain answer, not the stream a session meters; every
 * other request still meets the paywall (402).
 */
import { describe, expect, it } from 'vitest'
import { paidEntries } from '../../reference-gateway/catalog/catalog.js'
import { defaultModelId } from '../../reference-gateway/inference/models.js'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { passThrough } from './passThrough.js'

/** The paid routes' body cap in this gateway (`MAX_BODY_BYTES`). */
const cap = 64 * 1024
const gateway = useTestGateway({
  config: { maxBodyBytes: cap },
  pay: passThrough({ unpaid: (c) => c.req.header('x-unpaid') === 'yes' }),
})

const post = (body: string, unpaid = true) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(unpaid ? { 'x-unpaid': 'yes' } : {}) },
  body,
})
const rates = () => {
  const entry = paidEntries(gateway.catalog).find(
    (e) => e.endpoint.path === '/exchangerate/v1/rates',
  )
  if (entry === undefined) throw new Error('no exchange-rate route in the catalog')
  return { url: `${gateway.url}${entry.endpoint.path}`, body: entry.endpoint.shape.example }
}
const chat = (stream: boolean) =>
  JSON.stringify({
    model: defaultModelId,
    messages: [{ role: 'user', content: 'Say hello.' }],
    max_tokens: 8,
    stream,
  })

describe('the pass-through of the session benchmark', () => {
  it('serves a catalog route unpaid, and leaves other requests to the paywall', async () => {
    const { url, body } = rates()
    const unpaid = await fetch(url, post(JSON.stringify(body)))
    expect(unpaid.status).toBe(200)
    expect(unpaid.headers.has('payment-receipt')).toBe(false)
    expect(await unpaid.json()).toHaveProperty('rates')

    const paid = await fetch(url, post(JSON.stringify(body), false))
    expect(paid.status).toBe(402)
    await paid.arrayBuffer()
  })

  it('checks the body as the paywall does before a payment', async () => {
    const { url } = rates()
    const invalid = JSON.stringify({ base: 42 })
    const refused = await fetch(url, post(invalid))
    expect(refused.status).toBe(400)
    const problem = await refused.json()
    expect(problem).toMatchObject({ code: 'invalid_request_body', field: 'base' })
    const byPaywall = await fetch(url, post(invalid, false))
    expect([byPaywall.status, await byPaywall.json()]).toEqual([400, problem])

    const large = JSON.stringify({ base: 'USD', pad: 'x'.repeat(cap) })
    const tooLarge = await fetch(url, post(large))
    expect(tooLarge.status).toBe(413)
    const over = await tooLarge.json()
    expect(over).toMatchObject({ code: 'request_body_too_large' })
    const overByPaywall = await fetch(url, post(large, false))
    expect([overByPaywall.status, await overByPaywall.json()]).toEqual([413, over])
  })

  it('serves the keyless route its plain answer, not a metered stream', async () => {
    const url = `${gateway.url}/open/v1/chat/completions`
    // A session's call must stream (400 stream_required); the plain route answers either way.
    const buffered = await fetch(url, post(chat(false)))
    expect(buffered.status).toBe(200)
    const answer = (await buffered.json()) as { choices: { message: { content: string } }[] }
    expect(answer.choices[0]?.message.content).not.toBe('')

    const streamed = await fetch(url, post(chat(true)))
    expect(streamed.status).toBe(200)
    expect(streamed.headers.get('content-type')).toMatch(/text\/event-stream/)
    expect(await streamed.text()).toMatch(/data: \[DONE\]/)
  })
})
