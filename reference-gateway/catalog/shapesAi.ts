/**
 * Request shapes of the AI and media services beyond the spec's table: Together images, ElevenLabs,
 * Replicate, Stability, AssemblyAI and Cohere, each written from the provider's public API
 * reference (required fields, enums, ranges, sizes).
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from './shapes.js'
import { fileField, httpUrl, iso6391, model, text } from './shapes.js'

/** Together image models (FLUX). */
export const togetherImageModels = [
  'black-forest-labs/FLUX.1-schnell',
  'black-forest-labs/FLUX.1-schnell-Free',
  'black-forest-labs/FLUX.1-dev',
  'black-forest-labs/FLUX.1.1-pro',
] as const

const imageSide = z
  .int()
  .min(256)
  .max(1792)
  .refine((n) => n % 16 === 0, 'must be a multiple of 16')

/** Shape TOGETHER-IMAGE: Together `images/generations`; images come back as `{ url }`. */
export const togetherImage: Shape = {
  name: 'TOGETHER-IMAGE',
  description:
    'Image generation: prompt, optional FLUX model, width/height (256–1792, multiples of 16), steps, seed; images returned as { url }',
  schema: z.object({
    prompt: z.string().min(1).max(4000),
    model: z.enum(togetherImageModels).optional(),
    width: imageSide.optional(),
    height: imageSide.optional(),
    steps: z.int().min(1).max(50).optional(),
    n: z.int().min(1).max(1, 'must be 1: one image per paid call').optional(),
    seed: z.int().min(0).max(2_147_483_647).optional(),
  }),
  example: { prompt: 'A lighthouse at dawn, watercolor', width: 1024, height: 768, steps: 4 },
}

/** ElevenLabs speech models. */
export const elevenLabsModels = [
  'eleven_multilingual_v2',
  'eleven_flash_v2_5',
  'eleven_turbo_v2_5',
  'eleven_v3',
] as const

const unit = z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1')

/** Shape VOICE-SPEECH: ElevenLabs text to speech for the voice in the path; audio as `{ url }`. */
export const voiceSpeech: Shape = {
  name: 'VOICE-SPEECH',
  description:
    'Text to speech with the voice of the path: text (≤ 5000 characters), optional model_id, voice_settings, language_code; audio returned as { url }',
  schema: z.object({
    text: z.string().min(1).max(5000),
    model_id: z.enum(elevenLabsModels).optional(),
    language_code: z.enum(iso6391, 'must be an ISO-639-1 language code').optional(),
    voice_settings: z
      .object({
        stability: unit.optional(),
        similarity_boost: unit.optional(),
        style: unit.optional(),
        use_speaker_boost: z.boolean().optional(),
        speed: z.number().min(0.7).max(1.2).optional(),
      })
      .optional(),
    seed: z.int().min(0).max(4_294_967_295).optional(),
  }),
  example: { text: 'Hello from Tollgate.', model_id: 'eleven_multilingual_v2' },
}

/** Shape SOUND-EFFECT: ElevenLabs sound generation; audio as `{ url }`. */
export const soundEffect: Shape = {
  name: 'SOUND-EFFECT',
  description:
    'Sound effect from a description: text, optional duration_seconds (0.5–30), prompt_influence (0–1), loop; audio returned as { url }',
  schema: z.object({
    text: z.string().min(1).max(1000),
    duration_seconds: z.number().min(0.5).max(30).optional(),
    prompt_influence: unit.optional(),
    loop: z.boolean().optional(),
  }),
  example: { text: 'Rain on a tin roof', duration_seconds: 5 },
}

/** A Replicate model reference: `owner/name`, `owner/name:<version>` or a 64-hex version id. */
export const replicateVersion =
  /^(?:[a-z0-9][a-z0-9_.-]{0,63}\/[a-z0-9][a-z0-9_.-]{0,99}(?::[0-9a-f]{64})?|[0-9a-f]{64})$/

/** Shape PREDICTION: a Replicate prediction, waited for up to 60 s. */
export const prediction: Shape = {
  name: 'PREDICTION',
  description:
    'Run a model: version (owner/name, owner/name:version or a version id) and its input object; answers the prediction (poll unfinished ones with /status)',
  schema: z.object({
    version: z
      .string()
      .max(200)
      .regex(replicateVersion, 'must be owner/name, owner/name:<64-hex version> or a version id'),
    input: z.record(z.string().min(1).max(128), z.unknown()),
  }),
  example: {
    version: 'black-forest-labs/flux-schnell',
    input: { prompt: 'A red fox in fresh snow' },
  },
}

/** Shape PREDICTION-ID: the id of a Replicate prediction. */
export const predictionId: Shape = {
  name: 'PREDICTION-ID',
  description: 'A prediction id (from /v1/predictions)',
  schema: z.object({ id: z.string().regex(/^[a-z0-9]{8,64}$/, 'must be a prediction id') }),
  example: { id: 'gm3qorzdhgbfurvjtvhg6dckhu' },
}

/** Stability SD3 models. */
export const stabilityModels = [
  'sd3.5-large',
  'sd3.5-large-turbo',
  'sd3.5-medium',
  'sd3.5-flash',
] as const
/** Stability aspect ratios. */
export const aspectRatios = [
  '16:9',
  '1:1',
  '21:9',
  '2:3',
  '3:2',
  '4:5',
  '5:4',
  '9:16',
  '9:21',
] as const

const seed = z.int().min(0).max(4_294_967_294)
const outputFormat = z.enum(['png', 'jpeg', 'webp'])

/** Shape SD3: Stability image generation (multipart upstream); the image as `{ url }`. */
export const stabilityGenerate: Shape = {
  name: 'SD3',
  description:
    'Image generation: prompt, optional model, aspect_ratio, negative_prompt, seed, output_format; the image returned as { url }',
  schema: z.object({
    prompt: z.string().min(1).max(10_000),
    model: z.enum(stabilityModels).optional(),
    aspect_ratio: z.enum(aspectRatios).optional(),
    negative_prompt: z.string().max(10_000).optional(),
    seed: seed.optional(),
    output_format: z.enum(['png', 'jpeg']).optional(),
  }),
  example: { prompt: 'A lighthouse at dawn, watercolor', aspect_ratio: '3:2' },
}

/** Largest image sent for editing or compression, decoded: 10 MiB. */
export const imageMaxBytes = 10 * 1024 * 1024

/** Shape SEARCH-REPLACE: Stability search-and-replace edit of an image (URL or base64). */
export const stabilityEdit: Shape = {
  name: 'SEARCH-REPLACE',
  description:
    'Image edit: image (URL or base64), prompt (what to paint), search_prompt (what to replace); the image returned as { url }',
  schema: z.object({
    image: fileField(imageMaxBytes, 'image'),
    prompt: z.string().min(1).max(10_000),
    search_prompt: z.string().min(1).max(10_000),
    negative_prompt: z.string().max(10_000).optional(),
    seed: seed.optional(),
    output_format: outputFormat.optional(),
  }),
  example: {
    image: 'https://example.com/images/dog.png',
    prompt: 'a golden retriever',
    search_prompt: 'dog',
  },
}

/** AssemblyAI speech models. */
export const assemblyModels = ['universal-3-pro', 'universal-2'] as const

/** Shape TRANSCRIPT-JOB: an AssemblyAI transcription job of an audio URL. */
export const transcriptJob: Shape = {
  name: 'TRANSCRIPT-JOB',
  description:
    'Start a transcription: audio_url, optional speech_models (default universal-2), language_code, speaker_labels; answers the job id (read it with /result)',
  schema: z.object({
    audio_url: httpUrl,
    speech_models: z.array(z.enum(assemblyModels)).min(1).max(2).optional(),
    language_code: z
      .string()
      .regex(/^[a-z]{2,3}(?:_[a-z]{2})?$/, 'must be a language code like en or en_us')
      .optional(),
    speaker_labels: z.boolean().optional(),
    punctuate: z.boolean().optional(),
    format_text: z.boolean().optional(),
  }),
  example: { audio_url: 'https://example.com/audio/hello.mp3' },
}

/** Shape TRANSCRIPT-ID: the id of an AssemblyAI transcript. */
export const transcriptId: Shape = {
  name: 'TRANSCRIPT-ID',
  description: 'A transcript id (from /v1/transcribe)',
  schema: z.object({
    id: z.string().regex(/^[A-Za-z0-9-]{8,64}$/, 'must be a transcript id'),
  }),
  example: { id: '5551722-f677-48a6-9287-39c0aafd9ac1' },
}

/** Shape COHERE-CHAT: Cohere v2 chat. */
export const cohereChat: Shape = {
  name: 'COHERE-CHAT',
  description:
    'Chat: messages (role system/user/assistant, content), optional model, temperature (0–1), max_tokens',
  schema: z.object({
    model: model.optional(),
    messages: z
      .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: text() }))
      .min(1)
      .max(256),
    temperature: z.number().min(0).max(1).optional(),
    max_tokens: z.int().min(1).max(8192).optional(),
  }),
  example: { messages: [{ role: 'user', content: 'Say hello in one word.' }] },
}

/** Cohere embedding input types. */
export const cohereInputTypes = [
  'search_document',
  'search_query',
  'classification',
  'clustering',
] as const

/** Shape COHERE-EMBED: Cohere v2 embed (texts and their input type). */
export const cohereEmbed: Shape = {
  name: 'COHERE-EMBED',
  description: 'Embeddings: texts (1–96), optional model and input_type (default search_document)',
  schema: z.object({
    model: model.optional(),
    texts: z.array(z.string().min(1).max(100_000)).min(1).max(96),
    input_type: z.enum(cohereInputTypes).optional(),
  }),
  example: { texts: ['The quick brown fox'], input_type: 'search_document' },
}

/** Shape RERANK: Cohere v2 rerank. */
export const rerank: Shape = {
  name: 'RERANK',
  description: 'Rerank: query and documents (1–1000), optional model and top_n',
  schema: z.object({
    model: model.optional(),
    query: z.string().min(1).max(10_000),
    documents: z.array(z.string().min(1).max(100_000)).min(1).max(1000),
    top_n: z.int().min(1).max(1000).optional(),
  }),
  example: {
    query: 'What is the capital of France?',
    documents: ['Paris is the capital of France.', 'Berlin is in Germany.'],
    top_n: 1,
  },
}
