import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  chat,
  contents,
  email,
  embed,
  embedContent,
  imageGen,
  imageTier,
  iso6391,
  messages,
  music,
  openChat,
  query,
  type Shape,
  shapes,
  speech,
  transcribeFile,
  transcribeUrl,
  url,
  urlSchema,
  validateBody,
} from './shapes.js'

function invalid(shape: Shape, body: unknown) {
  const result = validateBody(shape, body)
  if (result.status !== 'invalid')
    throw new Error(`expected invalid, got ${JSON.stringify(result)}`)
  return result
}

function valid(shape: Shape, body: unknown) {
  const result = validateBody(shape, body)
  if (result.status !== 'valid') throw new Error(`expected valid, got ${JSON.stringify(result)}`)
  return result.body
}

describe('examples', () => {
  it.each(Object.values(shapes))('the example of $name validates', (shape) => {
    expect(valid(shape, shape.example)).toEqual(shape.example)
  })

  it('every shape has a JSON schema that is an object with properties', () => {
    for (const shape of Object.values(shapes)) {
      const schema = z.toJSONSchema(shape.schema, { io: 'input' }) as Record<string, unknown>
      expect(schema.type).toBe('object')
      expect(Object.keys(schema.properties as object).length).toBeGreaterThan(0)
    }
  })
})

describe('body', () => {
  it.each([null, 'text', 42, [], true])('a non-object body (%j) is invalid at "body"', (body) => {
    expect(invalid(chat, body)).toEqual({
      status: 'invalid',
      field: 'body',
      message: 'body must be a JSON object',
    })
  })

  it('unknown fields are stripped, never passed on', () => {
    expect(valid(chat, { ...chat.example, n: 100, stream_options: {} })).toEqual(chat.example)
  })
})

describe('CHAT', () => {
  const ok = {
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
    ],
  }
  it('accepts all fields in range', () => {
    valid(chat, { ...ok, model: 'gpt-4o-mini', temperature: 0, max_tokens: 10, stream: true })
    valid(chat, { ...ok, temperature: 2 })
  })
  it('requires messages', () => {
    expect(invalid(chat, {})).toMatchObject({ field: 'messages', message: 'messages is required' })
    expect(invalid(chat, { messages: [] }).field).toBe('messages')
  })
  it('names the bad message field', () => {
    expect(invalid(chat, { messages: [{ role: 'tool', content: 'x' }] }).field).toBe(
      'messages.0.role',
    )
    expect(invalid(chat, { messages: [{ role: 'user' }] })).toMatchObject({
      field: 'messages.0.content',
      message: 'messages.0.content is required',
    })
    expect(invalid(chat, { messages: [{ role: 'user', content: 5 }] }).field).toBe(
      'messages.0.content',
    )
  })
  it('keeps temperature within 0..2', () => {
    expect(invalid(chat, { ...ok, temperature: 2.01 })).toMatchObject({
      field: 'temperature',
      message: 'temperature: must be between 0 and 2',
    })
    expect(invalid(chat, { ...ok, temperature: -0.1 }).field).toBe('temperature')
  })
  it('rejects wrong types', () => {
    expect(invalid(chat, { ...ok, stream: 'yes' }).field).toBe('stream')
    expect(invalid(chat, { ...ok, max_tokens: 1.5 }).field).toBe('max_tokens')
    expect(invalid(chat, { ...ok, model: '' }).field).toBe('model')
  })
  it('limits sizes', () => {
    const many = Array.from({ length: 257 }, () => ({ role: 'user', content: 'x' }))
    expect(invalid(chat, { messages: many }).field).toBe('messages')
    expect(
      invalid(chat, { messages: [{ role: 'user', content: 'x'.repeat(200_001) }] }).field,
    ).toBe('messages.0.content')
  })
})

describe('MESSAGES', () => {
  const ok = messages.example
  it('requires model, messages and max_tokens', () => {
    for (const field of ['model', 'messages', 'max_tokens']) {
      const body: Record<string, unknown> = { ...ok }
      delete body[field]
      expect(invalid(messages, body)).toMatchObject({ field, message: `${field} is required` })
    }
  })
  it('takes an optional system prompt but no system role', () => {
    valid(messages, { ...ok, system: 'be brief' })
    expect(invalid(messages, { ...ok, messages: [{ role: 'system', content: 'x' }] }).field).toBe(
      'messages.0.role',
    )
  })
})

describe('EMBED', () => {
  it('takes a string or an array of strings', () => {
    valid(embed, { input: 'a' })
    valid(embed, { input: ['a', 'b'], model: 'text-embedding-3-small' })
  })
  it('rejects other inputs', () => {
    expect(invalid(embed, {}).message).toBe('input is required')
    expect(invalid(embed, { input: [] }).field).toBe('input')
    expect(invalid(embed, { input: [1] }).field).toBe('input')
  })
})

describe('IMAGE-GEN', () => {
  it('accepts the three sizes and the two models', () => {
    for (const size of ['1024x1024', '1024x1792', '1792x1024'])
      valid(imageGen, { prompt: 'p', size })
    for (const model of ['dall-e-3', 'gpt-image-1']) valid(imageGen, { prompt: 'p', model })
  })
  it('rejects other sizes, models and counts', () => {
    expect(invalid(imageGen, { prompt: 'p', size: '512x512' }).field).toBe('size')
    expect(invalid(imageGen, { prompt: 'p', model: 'midjourney' }).field).toBe('model')
    expect(invalid(imageGen, { prompt: 'p', n: 2 }).field).toBe('n')
    expect(invalid(imageGen, { prompt: '' }).field).toBe('prompt')
    expect(invalid(imageGen, {}).message).toBe('prompt is required')
  })
})

describe('TRANSCRIBE-FILE', () => {
  it('takes a URL, raw base64 or a data: URL', () => {
    valid(transcribeFile, { file: 'https://example.com/a.mp3' })
    valid(transcribeFile, { file: Buffer.from('RIFF....WAVE').toString('base64') })
    valid(transcribeFile, {
      file: `data:audio/wav;base64,${Buffer.from('abc').toString('base64')}`,
    })
  })
  it('accepts every ISO-639-1 code and nothing else', () => {
    for (const language of iso6391) valid(transcribeFile, { file: 'https://e.com/a', language })
    for (const language of ['english', 'EN', 'xx', 'eng', '']) {
      expect(invalid(transcribeFile, { file: 'https://e.com/a', language })).toMatchObject({
        field: 'language',
        message: 'language: must be an ISO-639-1 language code',
      })
    }
  })
  it('rejects files that are neither', () => {
    expect(invalid(transcribeFile, { file: 'ftp://example.com/a.mp3' }).field).toBe('file')
    expect(invalid(transcribeFile, { file: 'not base64!' }).field).toBe('file')
    expect(invalid(transcribeFile, {}).message).toBe('file is required')
  })
})

describe('SPEECH', () => {
  it('accepts the six voices and two tiers', () => {
    for (const voice of ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer']) {
      valid(speech, { input: 'hi', voice })
    }
    valid(speech, { input: 'hi', voice: 'nova', model: 'tts-1-hd' })
  })
  it('requires input and a known voice', () => {
    expect(invalid(speech, { input: 'hi' }).message).toBe('voice is required')
    expect(invalid(speech, { input: 'hi', voice: 'robot' }).field).toBe('voice')
    expect(invalid(speech, { voice: 'alloy' }).field).toBe('input')
    expect(invalid(speech, { input: 'x'.repeat(4097), voice: 'alloy' }).field).toBe('input')
  })
})

describe('IMAGE-TIER, TRANSCRIBE-URL, URL, URL+SCHEMA, MUSIC', () => {
  it('IMAGE-TIER checks presets and counts', () => {
    valid(imageTier, { prompt: 'p', image_size: 'square_hd', num_images: 4 })
    expect(invalid(imageTier, { prompt: 'p', image_size: '1024x1024' }).field).toBe('image_size')
    expect(invalid(imageTier, { prompt: 'p', num_images: 0 }).field).toBe('num_images')
  })
  it('URLs must be absolute http(s)', () => {
    for (const bad of ['example.com', 'javascript:alert(1)', 'file:///etc/passwd', 'http://']) {
      expect(invalid(url, { url: bad }).field).toBe('url')
      expect(invalid(transcribeUrl, { audio_url: bad }).field).toBe('audio_url')
    }
    expect(invalid(url, { url: `https://e.com/${'a'.repeat(2048)}` }).field).toBe('url')
  })
  it('URL+SCHEMA takes an optional object schema', () => {
    valid(urlSchema, { url: 'https://e.com' })
    expect(invalid(urlSchema, { url: 'https://e.com', schema: 'x' }).field).toBe('schema')
    expect(invalid(urlSchema, { url: 'https://e.com', schema: [] }).field).toBe('schema')
  })
  it('MUSIC is capped at 3 minutes', () => {
    valid(music, { prompt: 'p', seconds_total: 180 })
    expect(invalid(music, { prompt: 'p', seconds_total: 181 }).message).toBe(
      'seconds_total: must be at most 180 (3 minutes)',
    )
  })
})

describe('CONTENTS and EMBED-CONTENT', () => {
  it('CONTENTS requires parts with text; role is user or model', () => {
    valid(contents, { contents: [{ parts: [{ text: 'a' }] }] })
    expect(invalid(contents, { contents: [{ role: 'user' }] }).field).toBe('contents.0.parts')
    expect(
      invalid(contents, { contents: [{ role: 'assistant', parts: [{ text: 'a' }] }] }).field,
    ).toBe('contents.0.role')
    expect(invalid(contents, { contents: [{ parts: [{}] }] }).field).toBe('contents.0.parts.0.text')
  })
  it('EMBED-CONTENT requires content.parts', () => {
    expect(invalid(embedContent, { content: {} }).field).toBe('content.parts')
    expect(invalid(embedContent, {}).field).toBe('content')
  })
})

describe('QUERY', () => {
  it('requires a non-blank q of at most 400 characters', () => {
    expect(valid(query, { q: '  sui  ' })).toEqual({ q: 'sui' })
    expect(invalid(query, { q: '   ' }).field).toBe('q')
    expect(invalid(query, { q: 'x'.repeat(401) }).field).toBe('q')
    expect(invalid(query, {}).message).toBe('q is required')
  })
})

describe('EMAIL', () => {
  const ok = email.example
  it('accepts an address, a named address and an array of recipients', () => {
    valid(email, { ...ok, to: ['a@example.com', 'B <b@example.com>'], html: '<p>hi</p>' })
  })
  it('requires from, to, subject and a body', () => {
    for (const field of ['from', 'to', 'subject']) {
      const body: Record<string, unknown> = { ...ok }
      delete body[field]
      expect(invalid(email, body).field).toBe(field)
    }
    const { text: _text, ...noBody } = ok
    expect(invalid(email, noBody).message).toBe('text: html or text is required')
  })
  it('rejects malformed addresses and too many recipients', () => {
    expect(invalid(email, { ...ok, to: 'nobody' }).field).toBe('to')
    expect(invalid(email, { ...ok, from: 'a@b' }).field).toBe('from')
    const many = Array.from({ length: 51 }, (_, i) => `u${i}@example.com`)
    expect(invalid(email, { ...ok, to: many }).field).toBe('to')
  })
})

describe('OPEN-CHAT', () => {
  const shape = openChat({ models: ['llama-3.3-70b', 'conf-qwen3-32b'] })
  it('takes allow-listed models only', () => {
    valid(shape, shape.example)
    expect(invalid(shape, { ...shape.example, model: 'gpt-5' }).field).toBe('model')
    expect(invalid(shape, { messages: [{ role: 'user', content: 'x' }] }).message).toBe(
      'model is required',
    )
  })
  it('caps max_tokens at 4096 by default, or the configured cap', () => {
    valid(shape, { ...shape.example, max_tokens: 4096 })
    expect(invalid(shape, { ...shape.example, max_tokens: 4097 }).message).toBe(
      'max_tokens: must be at most 4096',
    )
    const small = openChat({ models: ['m'], maxTokens: 100 })
    expect(invalid(small, { ...small.example, max_tokens: 101 }).field).toBe('max_tokens')
  })
})

describe('validateBody on untrusted input (property)', () => {
  it('never throws, and a valid result validates again to itself', () => {
    const all = [...Object.values(shapes), openChat({ models: ['m'] })]
    fc.assert(
      fc.property(fc.constantFrom(...all), fc.jsonValue(), (shape, input) => {
        const result = validateBody(shape, input)
        if (result.status === 'valid') {
          expect(validateBody(shape, result.body)).toEqual(result)
        } else {
          expect(result.field.length).toBeGreaterThan(0)
          expect(result.message.length).toBeGreaterThan(0)
        }
      }),
      { numRuns: 500 },
    )
  })

  it('mutating one field of an example is caught or still valid, never a crash', () => {
    const all = Object.values(shapes)
    fc.assert(
      fc.property(fc.constantFrom(...all), fc.jsonValue(), fc.nat(), (shape, value, pick) => {
        const keys = Object.keys(shape.example)
        const key = keys[pick % keys.length] as string
        const result = validateBody(shape, { ...shape.example, [key]: value })
        if (result.status === 'invalid') expect(result.field.split('.')[0]).toBe(key)
      }),
      { numRuns: 500 },
    )
  })
})
