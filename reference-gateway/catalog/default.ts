/**
 * The default catalog: every endpoint with its shape, price and tags, in front of the providers'
 * public APIs, plus the free open-model list (what `/api/services` and the catalog page list).
 *
 * @module
 */
import type { Catalog, Service, Tag } from './catalog.js'
import { paid } from './paid.js'
import { defaultOpenModels, falModels, geminiModels, segments } from './segments.js'
import { dataServices, laterDataServices } from './servicesData.js'
import { mediaServices } from './servicesMedia.js'
import {
  languageServices,
  renderServices,
  securityServices,
  toolServices,
  utilityServices,
} from './servicesTools.js'
import * as shape from './shapes.js'
import { emailBatch } from './shapesTools.js'

/** Transcription bodies carry base64 audio: 25 MiB of audio is about 34 MiB of base64. */
const transcriptionBodyBytes = Math.ceil((shape.transcriptionMaxBytes * 4) / 3) + 64 * 1024

/**
 * Body cap of the open chat route: the full catalog's 24 000 characters, counted in bytes (a body of
 * non-ASCII text is capped earlier, never later).
 */
const openBodyBytes = 24_000

/** Options of {@link defaultCatalog}. */
export type DefaultCatalogOptions = {
  /** Model allow-list of the open chat route. Default {@link defaultOpenModels}. */
  openModels?: readonly [string, ...string[]] | undefined
  /** `max_tokens` cap of the open chat route. Default 4096. */
  openMaxTokens?: number | undefined
  /** Body cap of the open chat route in bytes. Default 24 000 (the full catalog's cap). */
  openMaxBodyBytes?: number | undefined
  /**
   * Base URL of the private inference API (`…/v1`), for a gateway that serves the `open` routes
   * through another gateway's inference API instead of its own (`servedBy` removed). Default
   * `http://127.0.0.1:4020/v1`.
   */
  inferenceUrl?: string | undefined
  /** The operator's Short.io domain for `/shortio/v1/shorten`. Default `short.gy`. */
  shortDomain?: string | undefined
}

/**
 * Builds the default catalog: 41 services, 89 paid endpoints and the free `GET /open/v1/models`
 * (`/api/services` lists them in this order).
 *
 * @example
 * ```ts
 * const catalog = defaultCatalog({ openModels: ['llama-3.3-70b'] })
 * ```
 */
export function defaultCatalog(options: DefaultCatalogOptions = {}): Catalog {
  const openChat = shape.openChat({
    models: options.openModels ?? defaultOpenModels,
    maxTokens: options.openMaxTokens ?? 4096,
  })
  const am: readonly Tag[] = ['ai', 'media']
  const ai: readonly Tag[] = ['ai']
  const wd: readonly Tag[] = ['web', 'data']
  const search: readonly Tag[] = ['search']

  const services: Service[] = [
    {
      segment: segments.openai,
      name: 'OpenAI',
      summary: 'Chat, embeddings, image generation, transcription and text to speech',
      tags: am,
      family: 'openai',
      upstream: { baseUrl: 'https://api.openai.com/v1', credential: 'OPENAI_API_KEY' },
      endpoints: [
        paid('/openai/v1/chat/completions', shape.chat, '0.020000', am, 'Chat completions', {
          operation: 'chat',
          defaults: { model: 'gpt-4o-mini' },
        }),
        paid('/openai/v1/embeddings', shape.embed, '0.020000', am, 'Embeddings', {
          operation: 'embeddings',
          defaults: { model: 'text-embedding-3-small' },
        }),
        // The spec says the upstream default model; OpenAI's API default (dall-e-2) cannot make two
        // of the three sizes, so the catalog names dall-e-3 explicitly.
        paid('/openai/v1/images/generations', shape.imageGen, '0.100000', am, 'Image generation', {
          operation: 'images',
          defaults: { model: 'dall-e-3' },
        }),
        paid(
          '/openai/v1/audio/transcriptions',
          shape.transcribeFile,
          '0.020000',
          am,
          'Transcription',
          { operation: 'transcription', defaults: { model: 'whisper-1' } },
          transcriptionBodyBytes,
        ),
        paid('/openai/v1/audio/speech', shape.speech, '0.040000', am, 'Text to speech', {
          operation: 'speech',
          defaults: { model: 'tts-1' },
        }),
      ],
    },
    {
      segment: segments.anthropic,
      name: 'Anthropic',
      summary: 'Claude messages',
      tags: ai,
      family: 'anthropic',
      upstream: { baseUrl: 'https://api.anthropic.com/v1', credential: 'ANTHROPIC_API_KEY' },
      endpoints: [
        paid('/anthropic/v1/messages', shape.messages, '0.020000', ai, 'Chat', {
          operation: 'messages',
        }),
      ],
    },
    {
      segment: segments.open,
      name: 'Open models',
      summary: 'Chat with open and confidential models (private inference), capped',
      tags: ai,
      family: 'openai-compatible',
      servedBy: 'inference',
      upstream: {
        baseUrl: options.inferenceUrl ?? 'http://127.0.0.1:4020/v1',
        credential: 'INFERENCE_API_KEY',
      },
      endpoints: [
        paid(
          '/open/v1/chat/completions',
          openChat,
          '0.050000',
          ai,
          'Chat with open and confidential models, capped',
          { operation: 'chat' },
          options.openMaxBodyBytes ?? openBodyBytes,
        ),
        {
          kind: 'free',
          method: 'GET',
          path: '/open/v1/models',
          tags: ai,
          summary: 'List the open models with pricing, context window and privacy tier (free)',
          upstream: { operation: 'models' },
        },
      ],
    },
    {
      segment: segments.fal,
      name: 'fal',
      summary: 'FLUX and Recraft image models, Whisper speech to text, Stable Audio music',
      tags: am,
      family: 'fal',
      upstream: { baseUrl: 'https://fal.run', credential: 'FAL_KEY' },
      endpoints: [
        paid(`/fal/${falModels.dev}`, shape.imageTier, '0.060000', am, 'Image generation', {
          operation: 'image',
          params: { model: falModels.dev },
        }),
        paid(`/fal/${falModels.pro}`, shape.imageTier, '0.100000', am, 'Image generation', {
          operation: 'image',
          params: { model: falModels.pro },
        }),
        paid(
          `/fal/${falModels.realism}`,
          shape.imageTier,
          '0.060000',
          am,
          'Photorealistic images',
          {
            operation: 'image',
            params: { model: falModels.realism },
          },
        ),
        paid(`/fal/${falModels.recraft20b}`, shape.imageTier, '0.060000', am, 'Image generation', {
          operation: 'image',
          params: { model: falModels.recraft20b },
        }),
        paid(`/fal/${falModels.whisper}`, shape.transcribeUrl, '0.020000', am, 'Speech to text', {
          operation: 'transcription',
          params: { model: falModels.whisper },
        }),
        paid(
          `/fal/${falModels.music}`,
          shape.music,
          '0.400000',
          am,
          'Music generation, up to 3 minutes',
          { operation: 'audio', params: { model: falModels.music } },
        ),
      ],
    },
    {
      segment: segments.firecrawl,
      name: 'Firecrawl',
      summary: 'Scrape, crawl, map and extract structured data from the web',
      tags: wd,
      family: 'firecrawl',
      upstream: { baseUrl: 'https://api.firecrawl.dev/v1', credential: 'FIRECRAWL_API_KEY' },
      endpoints: [
        paid('/firecrawl/v1/scrape', shape.url, '0.020000', wd, 'Scrape a URL to structured data', {
          operation: 'scrape',
        }),
        paid('/firecrawl/v1/crawl', shape.url, '0.100000', wd, 'Crawl a site', {
          operation: 'crawl',
        }),
        paid('/firecrawl/v1/map', shape.url, '0.020000', wd, 'Discover URLs on a site', {
          operation: 'map',
        }),
        paid(
          '/firecrawl/v1/extract',
          shape.urlSchema,
          '0.040000',
          wd,
          'LLM-based structured extraction',
          { operation: 'extract' },
        ),
      ],
    },
    {
      segment: segments.gemini,
      name: 'Gemini',
      summary: 'Fast multimodal and reasoning generation, text embeddings',
      tags: ai,
      family: 'gemini',
      upstream: {
        baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
        credential: 'GEMINI_API_KEY',
      },
      endpoints: [
        paid(
          `/gemini/v1beta/models/${geminiModels.fast}`,
          shape.contents,
          '0.020000',
          ai,
          'Fast multimodal generation',
          { operation: 'generateContent', params: { model: geminiModels.fast } },
        ),
        paid(
          `/gemini/v1beta/models/${geminiModels.pro}`,
          shape.contents,
          '0.040000',
          ai,
          'Reasoning generation',
          { operation: 'generateContent', params: { model: geminiModels.pro } },
        ),
        paid(
          `/gemini/v1beta/models/${geminiModels.embed}`,
          shape.embedContent,
          '0.020000',
          ai,
          'Text embeddings',
          { operation: 'embedContent', params: { model: geminiModels.embed } },
        ),
      ],
    },
    {
      segment: segments.groq,
      name: 'Groq',
      summary: 'Fast chat and transcription',
      tags: ai,
      family: 'openai-compatible',
      upstream: { baseUrl: 'https://api.groq.com/openai/v1', credential: 'GROQ_API_KEY' },
      endpoints: [
        paid('/groq/v1/chat/completions', shape.chat, '0.020000', ai, 'Chat', {
          operation: 'chat',
          defaults: { model: 'llama-3.3-70b-versatile' },
        }),
        paid(
          '/groq/v1/audio/transcriptions',
          shape.transcribeFile,
          '0.020000',
          ai,
          'Transcription',
          { operation: 'transcription', defaults: { model: 'whisper-large-v3-turbo' } },
          transcriptionBodyBytes,
        ),
      ],
    },
    {
      segment: segments.perplexity,
      name: 'Perplexity',
      summary: 'Web-grounded answers',
      tags: ['ai', 'search'],
      family: 'openai-compatible',
      upstream: { baseUrl: 'https://api.perplexity.ai', credential: 'PERPLEXITY_API_KEY' },
      endpoints: [
        paid(
          '/perplexity/v1/chat/completions',
          shape.chat,
          '0.020000',
          ['ai', 'search'],
          'Web-grounded answers',
          {
            operation: 'chat',
            defaults: { model: 'sonar' },
          },
        ),
      ],
    },
    {
      segment: segments.brave,
      name: 'Brave Search',
      summary: 'Web, image, news and video search, and summarized search',
      tags: search,
      family: 'brave',
      upstream: { baseUrl: 'https://api.search.brave.com/res/v1', credential: 'BRAVE_API_KEY' },
      endpoints: (['web', 'images', 'news', 'videos', 'summarizer'] as const).map((kind) =>
        paid(`/brave/v1/${kind}/search`, shape.query, '0.020000', search, braveSummary[kind], {
          operation: 'search',
          params: { kind },
        }),
      ),
    },
    {
      segment: segments.deepseek,
      name: 'DeepSeek',
      summary: 'Chat, including a reasoning model',
      tags: ai,
      family: 'openai-compatible',
      upstream: { baseUrl: 'https://api.deepseek.com', credential: 'DEEPSEEK_API_KEY' },
      endpoints: [
        paid(
          '/deepseek/v1/chat/completions',
          shape.chat,
          '0.020000',
          ai,
          'Chat, including a reasoning model',
          {
            operation: 'chat',
            defaults: { model: 'deepseek-chat' },
          },
        ),
      ],
    },
    {
      segment: segments.resend,
      name: 'Resend',
      summary: 'Send e-mail',
      tags: ['communication'],
      family: 'resend',
      upstream: { baseUrl: 'https://api.resend.com', credential: 'RESEND_API_KEY' },
      endpoints: [
        paid('/resend/v1/emails', shape.email, '0.020000', ['communication'], 'Send an email', {
          operation: 'send',
        }),
        paid(
          '/resend/v1/emails/batch',
          emailBatch,
          '0.020000',
          ['communication'],
          'Send up to 100 emails',
          { operation: 'batch' },
          4 * 1024 * 1024,
        ),
      ],
    },
    ...mediaServices().slice(0, 2),
    ...dataServices().slice(0, 2),
    ...toolServices().slice(0, 2),
    ...dataServices().slice(2, 5),
    ...toolServices().slice(2),
    ...renderServices(),
    ...mediaServices().slice(2),
    ...dataServices().slice(5),
    ...languageServices().slice(0, 1),
    ...laterDataServices().slice(0, 1),
    ...languageServices().slice(1),
    ...securityServices(),
    ...laterDataServices().slice(1),
    ...utilityServices({ shortDomain: options.shortDomain ?? 'short.gy' }),
  ]
  return { services }
}

const braveSummary = {
  web: 'Web search',
  images: 'Image search',
  news: 'News search',
  videos: 'Video search',
  summarizer: 'Summarized search',
} as const
