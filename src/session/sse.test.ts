import { describe, expect, it } from 'vitest'
import { formatMeteredEvent, isUnitEvent, sseEvents, sseFields } from './sse.js'

/** A body that delivers `text` in the given pieces. */
function body(...pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece))
      controller.close()
    },
  })
}

async function all(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const events: string[] = []
  for await (const event of sseEvents(stream)) events.push(event)
  return events
}

describe('sseEvents', () => {
  it('splits events across chunk boundaries, CRLF line ends and a multi-byte character', async () => {
    const euro = new TextEncoder().encode('€')
    const split = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: {"t":"a'))
        controller.enqueue(euro.slice(0, 1))
        controller.enqueue(euro.slice(1))
        controller.enqueue(new TextEncoder().encode('"}\r\n\r\n: comment\r\n\r\ndata: [DONE]'))
        controller.close()
      },
    })
    expect(await all(split)).toEqual(['data: {"t":"a€"}', ': comment', 'data: [DONE]'])
  })

  it('refuses an event longer than 1 MiB', async () => {
    await expect(all(body(`data: ${'x'.repeat((1 << 20) + 10)}`))).rejects.toThrow(RangeError)
  })
})

describe('units and fields', () => {
  it('counts data events other than [DONE]; comments and named events pass free', () => {
    expect(isUnitEvent('data: {"token":1}')).toBe(true)
    expect(isUnitEvent('id: 3\ndata: x')).toBe(true)
    expect(isUnitEvent('data: [DONE]')).toBe(false)
    expect(isUnitEvent(': keep-alive')).toBe(false)
    expect(isUnitEvent('event: payment-receipt\ndata: {}')).toBe(false)
    expect(sseFields('event:ping\ndata:a\ndata: b')).toEqual({ name: 'ping', data: 'a\nb' })
  })

  it('writes the session events as named JSON events and messages as they came', () => {
    expect(formatMeteredEvent({ type: 'message', data: 'data: x' })).toBe('data: x\n\n')
    expect(
      formatMeteredEvent({
        type: 'payment-receipt',
        data: { channelId: '0x1', acceptedCumulative: '5', spent: '3', units: '3' },
      }),
    ).toBe(
      'event: payment-receipt\ndata: {"channelId":"0x1","acceptedCumulative":"5","spent":"3","units":"3"}\n\n',
    )
  })
})
