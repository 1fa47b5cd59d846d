import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { readBody } from '../body.js'
import { attachPaidResponse, encodePlain, nodeRequestView } from './nodeHttp.js'

function incoming(headers: Record<string, string | string[]>, encrypted = false): IncomingMessage {
  const socket = new Socket()
  if (encrypted) Object.assign(socket, { encrypted: true })
  const message = new IncomingMessage(socket)
  message.headers = headers
  return message
}

describe('nodeRequestView', () => {
  it('builds the absolute URL from the scheme, Host and the target as received', () => {
    expect(
      nodeRequestView(incoming({ host: 'shop.example:8080' }), '/v1/x?q=1', undefined).url,
    ).toBe('http://shop.example:8080/v1/x?q=1')
    expect(nodeRequestView(incoming({ host: 'shop.example' }, true), '/a', undefined).url).toBe(
      'https://shop.example/a',
    )
    // Upper case in the Host, as received: the engine's resource URL is the parsed one.
    expect(nodeRequestView(incoming({ host: 'Shop.Example' }), '/a', undefined).url).toBe(
      'http://Shop.Example/a',
    )
    // HTTP/2 has no Host header: the authority pseudo-header stands in.
    expect(nodeRequestView(incoming({ ':authority': 'h2.example' }), '/a', undefined).url).toBe(
      'http://h2.example/a',
    )
  })

  it('falls back to localhost for a Host that is not a host, and to / for a target that is not one', () => {
    expect(nodeRequestView(incoming({ host: 'evil/../x' }), '/a', undefined).url).toBe(
      'http://localhost/a',
    )
    expect(nodeRequestView(incoming({ host: 'a.example' }), 'http://[bad', undefined).url).toBe(
      'http://a.example/',
    )
  })

  it('looks headers up by any case and joins repeated values as Headers does', () => {
    const view = nodeRequestView(
      incoming({ 'x-payment': 'abc', 'set-cookie': ['a=1', 'b=2'] }),
      '/',
      undefined,
    )
    expect(view.headers.get('X-PAYMENT')).toBe('abc')
    expect(view.headers.get('set-cookie')).toBe('a=1, b=2')
    expect(view.headers.get('authorization')).toBeNull()
    // Asked again, and in other spellings.
    expect(view.headers.get('X-PAYMENT')).toBe('abc')
    expect(view.headers.get('X-Payment')).toBe('abc')
    expect(view.headers.get('Set-Cookie')).toBe('a=1, b=2')
    for (let i = 0; i < 100; i++) expect(view.headers.get(`X-Unknown-${i}`)).toBeNull()
    expect(view.headers.get('x-PAYMENT')).toBe('abc')
  })

  it('hands the bytes it was given to body validation, with the size limit', async () => {
    const json = (bytes: string) =>
      nodeRequestView(incoming({ 'content-type': 'application/json' }), '/', Buffer.from(bytes))
    const validator = (body: unknown) =>
      typeof (body as { n?: unknown }).n === 'number'
        ? ({ status: 'valid', body } as const)
        : ({ status: 'invalid', field: 'n', message: 'n must be a number' } as const)
    expect(await readBody(json('{"n":1}'), validator)).toEqual({
      status: 'ok',
      body: { n: 1 },
      text: '{"n":1}',
    })
    expect(await readBody(json('{"n":"x"}'), validator)).toMatchObject({
      status: 'invalid',
      field: 'n',
    })
    expect(await readBody(json('{"n":'), validator)).toMatchObject({
      status: 'invalid',
      field: null,
    })
    expect(await readBody(json('{"n":12345}'), validator, 8)).toEqual({
      status: 'too_large',
      limit: 8,
    })
    expect(await readBody(nodeRequestView(incoming({}), '/', undefined), validator)).toMatchObject({
      status: 'invalid',
      message: 'A JSON request body is required.',
    })
  })
})

describe('encodePlain', () => {
  it('adds Content-Length in bytes and reuses the encoding for the same answer', () => {
    const plain = { status: 402, headers: { 'Content-Type': 'application/json' }, body: '{"é":1}' }
    const first = encodePlain(plain)
    expect(first.headers).toEqual({ 'Content-Type': 'application/json', 'Content-Length': '8' })
    expect(encodePlain(plain)).toBe(first)
  })
})

describe('attachPaidResponse', () => {
  async function outcomeOf(
    serve: (res: import('node:http').ServerResponse) => void,
  ): Promise<unknown> {
    const { createServer } = await import('node:http')
    let resolveOutcome: (outcome: unknown) => void = () => {}
    const outcome = new Promise((resolve) => {
      resolveOutcome = resolve
    })
    const decision = {
      isFailure: () => false,
      headersFor: () => ({}),
      start: () => {},
      complete: (o: unknown) => {
        resolveOutcome(o)
        return Promise.resolve('served' as const)
      },
    }
    const server = createServer((_req, res) => {
      attachPaidResponse(res, decision as never)
      serve(res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    const { port } = server.address() as import('node:net').AddressInfo
    await fetch(`http://127.0.0.1:${port}/`)
      .then((r) => r.text())
      .catch(() => undefined)
    const result = await outcome
    server.closeAllConnections()
    server.close()
    return result
  }

  it('records a finished response by its status', async () => {
    expect(await outcomeOf((res) => res.end('ok'))).toEqual({ status: 200 })
  })

  it('records a response destroyed with an error, then ended, as failed (not finished)', async () => {
    const outcome = await outcomeOf((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: a\n\n')
      setTimeout(() => {
        res.destroy(new Error('upstream stream broke'))
        res.end()
      }, 20)
    })
    expect(outcome).toMatchObject({ error: { message: 'upstream stream broke' } })
  })
})
