import { describe, expect, it } from 'vitest'
import { readBounded } from './request.js'
import { maxChallengeBodyBytes } from './select.js'

describe('readBounded', () => {
  it('reads a body up to the cap as text', async () => {
    expect(await readBounded(new Response('{"accepts":[]}'))).toBe('{"accepts":[]}')
    expect(await readBounded(new Response('é'.repeat(maxChallengeBodyBytes / 2)))).toHaveLength(
      maxChallengeBodyBytes / 2,
    )
    expect(await readBounded(new Response(null, { status: 402 }))).toBe('')
  })

  it('reads a body without a length as empty once it passes the cap, without reading the rest', async () => {
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulled++
          controller.enqueue(new Uint8Array(16 * 1024).fill(0x61))
        },
      },
      { highWaterMark: 0 },
    )
    expect(await readBounded(new Response(endless, { status: 402 }))).toBe('')
    expect(pulled).toBe(maxChallengeBodyBytes / (16 * 1024) + 1)
  })

  it('reads a body whose declared length is over the cap as empty', async () => {
    const declared = new Response('{}', {
      headers: { 'content-length': String(maxChallengeBodyBytes + 1) },
    })
    expect(await readBounded(declared)).toBe('')
  })
})
