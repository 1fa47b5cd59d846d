/**
 * Rows of the endpoint suite for the AI and media services (the catalog's `servicesMedia.ts`): Together, ElevenLabs, Replicate,
 * Stability and AssemblyAI: the exact upstream request(s) nock expects (URL, method,
 * where the key goes, body or query mapping), the answer, what the buyer gets. Test support only.
 *
 * @module
 */
import { expect } from 'vitest'
import { type Expectation, mp3, png, type RowContext, rowKit, rows } from './kit.js'

/** The rows, by gateway path. */
export function mediaRows(context: RowContext): Record<string, Expectation> {
  const { bearer, blob, chat, file, key, post, together } = rowKit(context)
  return {
    '/together/v1/chat/completions': chat(
      together,
      '/v1/chat/completions',
      'TOGETHER_API_KEY',
      'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    ),
    '/together/v1/images/generations': rows(
      (b) => [
        {
          origin: together,
          method: 'POST',
          path: '/v1/images/generations',
          headers: bearer('TOGETHER_API_KEY'),
          body: { model: 'black-forest-labs/FLUX.1-schnell', n: 1, ...b },
          reply: [200, { created: 5, data: [{ url: 'https://api.together.ai/shrt/x.png' }] }],
        },
        {
          origin: 'https://api.together.ai',
          method: 'GET',
          path: '/shrt/x.png',
          absent: ['authorization'],
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      async (out) => {
        const data = out.data as { url: string }[]
        expect(out.created).toBe(5)
        expect(await blob(data[0]?.url)).toEqual(png)
      },
    ),
    '/together/v1/embeddings': post(
      together,
      '/v1/embeddings',
      bearer('TOGETHER_API_KEY'),
      (b) => ({ model: 'BAAI/bge-base-en-v1.5', ...b }),
    ),
    '/elevenlabs/v1/text-to-speech/{voiceId}': file(
      (b) => [
        {
          origin: 'https://api.elevenlabs.io',
          method: 'POST',
          path: '/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM',
          query: { output_format: 'mp3_44100_128' },
          headers: { 'xi-api-key': key('ELEVENLABS_API_KEY') },
          absent: ['authorization'],
          body: b,
          reply: [200, mp3, { 'content-type': 'audio/mpeg' }],
        },
      ],
      mp3,
      'audio/mpeg',
    ),
    '/elevenlabs/v1/sound-generation': file(
      (b) => [
        {
          origin: 'https://api.elevenlabs.io',
          method: 'POST',
          path: '/v1/sound-generation',
          query: { output_format: 'mp3_44100_128' },
          headers: { 'xi-api-key': key('ELEVENLABS_API_KEY') },
          body: b,
          reply: [200, mp3, { 'content-type': 'audio/mpeg' }],
        },
      ],
      mp3,
      'audio/mpeg',
    ),
    '/replicate/v1/predictions': post(
      'https://api.replicate.com',
      '/v1/predictions',
      { ...bearer('REPLICATE_API_KEY'), prefer: 'wait=60' },
      (b) => ({ version: b.version, input: b.input }),
      {
        id: 'p1',
        status: 'succeeded',
        output: ['o'],
        urls: { get: 'https://api.replicate.com/x' },
      },
      { id: 'p1', status: 'succeeded', output: ['o'] },
    ),
    '/replicate/v1/predictions/status': rows(
      (b) => [
        {
          origin: 'https://api.replicate.com',
          method: 'GET',
          path: `/v1/predictions/${String(b.id)}`,
          headers: bearer('REPLICATE_API_KEY'),
          reply: [200, { id: b.id, status: 'processing', urls: {} }],
        },
      ],
      (out, b) => expect(out).toEqual({ id: b.id, status: 'processing' }),
    ),
    '/stability/v1/generate': file(
      (b) => [
        {
          origin: 'https://api.stability.ai',
          method: 'POST',
          path: '/v2beta/stable-image/generate/sd3',
          headers: { ...bearer('STABILITY_API_KEY'), accept: 'image/*' },
          form: (f) =>
            f.get('prompt') === b.prompt &&
            f.get('aspect_ratio') === b.aspect_ratio &&
            f.get('output_format') === 'png',
          reply: [200, png, { 'content-type': 'image/png', seed: '7' }],
        },
      ],
      png,
      'image/png',
      { seed: 7 },
    ),
    '/stability/v1/edit': file(
      (b) => [
        {
          origin: 'https://example.com',
          method: 'GET',
          path: '/images/dog.png',
          download: true,
          absent: ['authorization'],
          reply: [200, png, { 'content-type': 'image/png' }],
        },
        {
          origin: 'https://api.stability.ai',
          method: 'POST',
          path: '/v2beta/stable-image/edit/search-and-replace',
          headers: { ...bearer('STABILITY_API_KEY'), accept: 'image/*' },
          form: async (f) =>
            f.get('prompt') === b.prompt &&
            f.get('search_prompt') === b.search_prompt &&
            Buffer.from(await (f.get('image') as File).arrayBuffer()).equals(png),
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      png,
      'image/png',
    ),
    '/assemblyai/v1/transcribe': post(
      'https://api.assemblyai.com',
      '/v2/transcript',
      { authorization: key('ASSEMBLYAI_API_KEY') },
      (b) => ({ audio_url: b.audio_url, speech_models: ['universal-2'] }),
      { id: 't1', status: 'queued', audio_url: 'x' },
      { id: 't1', status: 'queued' },
    ),
    '/assemblyai/v1/result': rows(
      (b) => [
        {
          origin: 'https://api.assemblyai.com',
          method: 'GET',
          path: `/v2/transcript/${String(b.id)}`,
          headers: { authorization: key('ASSEMBLYAI_API_KEY') },
          reply: [200, { id: b.id, status: 'completed', text: 'hello' }],
        },
      ],
      (out, b) => expect(out).toEqual({ id: b.id, status: 'completed', text: 'hello' }),
    ),
  }
}
