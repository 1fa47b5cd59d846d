/**
 * The OpenAI-compatible family: chat (streaming passed through), embeddings, image generation
 * (re-hosted as `{ url }`), transcription (multipart) and the model list, as spoken by Groq,
 * Perplexity, DeepSeek, Together, Mistral and the project's own private inference API.
 * Same wire as {@link openai}; the base URL and default model come from the catalog.
 *
 * @module
 */
import { chat, embeddings, images, models, transcription } from './openai.js'
import type { Family } from './upstream.js'

/** The OpenAI-compatible family module. */
export const openaiCompatible: Family = {
  id: 'openai-compatible',
  timeoutMs: 120_000,
  operations: { chat, embeddings, images, transcription, models },
}
