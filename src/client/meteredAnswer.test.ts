import { describe, expect, it } from 'vitest'
import { watchMeteredAnswer } from './meteredAnswer.js'
import type { WindowStream } from './streamWindow.js'

const encoder = new TextEncoder()

/** A window stream that records what it was told. */
function recorder() {
  const told: string[] = []
  const stream: WindowStream = {
    unit: () => told.push('unit'),
    needed: async (required) => {
      told.push(`needed ${required}`)
      return required
    },
    spent: (spent) => told.push(`spent ${spent}`),
    close: () => told.push('close'),
  }
  return { told, stream }
}

/** A body of these chunks, then `end` (`close` or an error). */
function body(chunks: string[], end: 'close' | Error = 'close'): ReadableStream<Uint8Array> {
  let i = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[i++]
      if (chunk !== undefined) controller.enqueue(encoder.encode(chunk))
      else if (end === 'close') controller.close()
      else controller.error(end)
    },
  })
}

describe('watchMeteredAnswer', () => {
  it('passes the bytes unchanged and tells the window of units, a need, the receipt and the end', async () => {
    const chunks = [
      'data: {"t":1}\n\ndata: {"t":2}\n',
      '\nevent: payment-need-voucher\ndata: {"requiredCumulative":"30"}\n\n',
      'data: [DONE]\n\nevent: payment-receipt\ndata: {"spent":"20"}\n\n',
    ]
    const { told, stream } = recorder()
    const answer = watchMeteredAnswer(new Response(body(chunks), { status: 200 }), stream)
    expect(await answer.text()).toBe(chunks.join(''))
    expect(told).toEqual(['unit', 'unit', 'needed 30', 'spent 20', 'close', 'close'])
  })

  it('closes the window when the reader leaves, and cancels the answer it read', async () => {
    let cancelled = false
    const source = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(encoder.encode('data: {"t":1}\n\n')),
      cancel: () => {
        cancelled = true
      },
    })
    const { told, stream } = recorder()
    const reader = watchMeteredAnswer(new Response(source), stream).body?.getReader()
    await reader?.read()
    await reader?.cancel()
    expect(told).toContain('close')
    expect(cancelled).toBe(true)
  })

  it('closes the window when the answer breaks, and hands the reader the error', async () => {
    const { told, stream } = recorder()
    const answer = watchMeteredAnswer(
      new Response(body(['data: {"t":1}\n\n'], new Error('broken'))),
      stream,
    )
    await expect(answer.text()).rejects.toThrow('broken')
    expect(told).toEqual(['unit', 'close'])
  })
})
