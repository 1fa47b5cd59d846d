/**
 * The default catalog's AI and media services beyond the spec's table: Together, ElevenLabs,
 * Replicate, Stability and AssemblyAI.
 *
 * @module
 */
import type { Service, Tag } from './catalog.js'
import { paid } from './paid.js'
import * as shape from './shapes.js'
import * as ai from './shapesAi.js'

const am: readonly Tag[] = ['ai', 'media']

/** Together, ElevenLabs, Replicate, Stability and AssemblyAI. */
export function mediaServices(): Service[] {
  return [
    {
      segment: 'together',
      name: 'Together AI',
      summary: 'Open-model chat, FLUX image generation and embeddings',
      tags: am,
      family: 'openai-compatible',
      upstream: { baseUrl: 'https://api.together.xyz/v1', credential: 'TOGETHER_API_KEY' },
      endpoints: [
        paid('/together/v1/chat/completions', shape.chat, '0.020000', am, 'Open-model chat', {
          operation: 'chat',
          defaults: { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' },
        }),
        paid(
          '/together/v1/images/generations',
          ai.togetherImage,
          '0.060000',
          am,
          'FLUX image generation',
          {
            operation: 'images',
            defaults: { model: 'black-forest-labs/FLUX.1-schnell', n: 1 },
          },
        ),
        paid('/together/v1/embeddings', shape.embed, '0.020000', am, 'Embeddings', {
          operation: 'embeddings',
          defaults: { model: 'BAAI/bge-base-en-v1.5' },
        }),
      ],
    },
    {
      segment: 'elevenlabs',
      name: 'ElevenLabs',
      summary: 'Lifelike text to speech in a chosen voice, and sound effects',
      tags: am,
      family: 'elevenlabs',
      upstream: { baseUrl: 'https://api.elevenlabs.io/v1', credential: 'ELEVENLABS_API_KEY' },
      endpoints: [
        paid(
          '/elevenlabs/v1/text-to-speech/{voiceId}',
          ai.voiceSpeech,
          '0.100000',
          am,
          'Text to speech in the voice of the path',
          { operation: 'speech' },
          {
            pathParams: {
              voiceId: {
                pattern: /^[A-Za-z0-9]{8,40}$/,
                description: 'must be an ElevenLabs voice id (8–40 letters and digits)',
                example: '21m00Tcm4TlvDq8ikWAM',
              },
            },
          },
        ),
        paid('/elevenlabs/v1/sound-generation', ai.soundEffect, '0.100000', am, 'Sound effects', {
          operation: 'sound',
        }),
      ],
    },
    {
      segment: 'replicate',
      name: 'Replicate',
      summary: 'Run any public model; poll unfinished predictions',
      tags: am,
      family: 'replicate',
      upstream: { baseUrl: 'https://api.replicate.com/v1', credential: 'REPLICATE_API_KEY' },
      endpoints: [
        paid(
          '/replicate/v1/predictions',
          ai.prediction,
          '0.040000',
          am,
          'Run a model (waits up to 60 s)',
          { operation: 'predict' },
        ),
        paid(
          '/replicate/v1/predictions/status',
          ai.predictionId,
          '0.020000',
          am,
          'Status and output of a prediction',
          { operation: 'status' },
        ),
      ],
    },
    {
      segment: 'stability',
      name: 'Stability AI',
      summary: 'Stable Diffusion 3.5 image generation and search-and-replace editing',
      tags: am,
      family: 'stability',
      upstream: { baseUrl: 'https://api.stability.ai/v2beta', credential: 'STABILITY_API_KEY' },
      endpoints: [
        paid('/stability/v1/generate', ai.stabilityGenerate, '0.060000', am, 'Image generation', {
          operation: 'generate',
        }),
        paid(
          '/stability/v1/edit',
          ai.stabilityEdit,
          '0.060000',
          am,
          'Replace an object in an image',
          { operation: 'edit' },
          Math.ceil((ai.imageMaxBytes * 4) / 3) + 64 * 1024,
        ),
      ],
    },
    {
      segment: 'assemblyai',
      name: 'AssemblyAI',
      summary: 'Speech to text jobs for audio URLs',
      tags: am,
      family: 'assemblyai',
      upstream: { baseUrl: 'https://api.assemblyai.com/v2', credential: 'ASSEMBLYAI_API_KEY' },
      endpoints: [
        paid(
          '/assemblyai/v1/transcribe',
          ai.transcriptJob,
          '0.040000',
          am,
          'Start a transcription job',
          { operation: 'transcribe' },
        ),
        paid(
          '/assemblyai/v1/result',
          ai.transcriptId,
          '0.020000',
          am,
          'Status and text of a transcription job',
          { operation: 'result' },
        ),
      ],
    },
  ]
}
