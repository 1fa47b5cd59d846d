/**
 * The provider path segments of the default catalog and the model slugs its paths name.
 *
 * @module
 */

/**
 * The provider path segments: stable constants, named after the public API family each speaks.
 * `open` is this project's own private inference API.
 */
export const segments = {
  openai: 'openai',
  anthropic: 'anthropic',
  open: 'open',
  fal: 'fal',
  firecrawl: 'firecrawl',
  gemini: 'gemini',
  groq: 'groq',
  perplexity: 'perplexity',
  brave: 'brave',
  deepseek: 'deepseek',
  resend: 'resend',
  together: 'together',
  elevenlabs: 'elevenlabs',
  openweather: 'openweather',
  googlemaps: 'googlemaps',
  judge0: 'judge0',
  lob: 'lob',
  coingecko: 'coingecko',
  alphavantage: 'alphavantage',
  newsapi: 'newsapi',
  deepl: 'deepl',
  exa: 'exa',
  jina: 'jina',
  serper: 'serper',
  screenshot: 'screenshot',
  pdfshift: 'pdfshift',
  qrcode: 'qrcode',
  replicate: 'replicate',
  stability: 'stability',
  assemblyai: 'assemblyai',
  hunter: 'hunter',
  ipinfo: 'ipinfo',
  translate: 'translate',
  serpapi: 'serpapi',
  pushover: 'pushover',
  mistral: 'mistral',
  cohere: 'cohere',
  virustotal: 'virustotal',
  exchangerate: 'exchangerate',
  shortio: 'shortio',
  tinify: 'tinify',
} as const

/** The fal model slugs the catalog routes to. */
export const falModels = {
  dev: 'fal-ai/flux/dev',
  pro: 'fal-ai/flux-pro',
  realism: 'fal-ai/flux-realism',
  recraft20b: 'fal-ai/recraft-20b',
  whisper: 'fal-ai/whisper',
  music: 'fal-ai/stable-audio-25/text-to-audio',
} as const

/** The Gemini model slugs the catalog routes to. */
export const geminiModels = {
  fast: 'gemini-2.5-flash',
  pro: 'gemini-2.5-pro',
  embed: 'gemini-embedding-001',
} as const

/** Open models the `open` chat route allows by default (configurable). */
export const defaultOpenModels = [
  'llama-3.3-70b',
  'qwen3-32b',
  'confidential/llama-3.3-70b',
] as const
