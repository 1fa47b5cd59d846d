/**
 * The default catalog's web, translation, compute, commerce, messaging, security and utility
 * services: Judge0, Lob, DeepL, Exa, Jina Reader, Serper, ScreenshotOne, PDFShift, the QR code API,
 * Google Translate, Pushover, Mistral, Cohere, VirusTotal, Short.io and Tinify.
 *
 * @module
 */
import type { Service, Tag } from './catalog.js'
import { paid } from './paid.js'
import * as shape from './shapes.js'
import * as ai from './shapesAi.js'
import * as data from './shapesData.js'
import * as tools from './shapesTools.js'
import * as web from './shapesWeb.js'

const p = '0.020000'
const imageBody = Math.ceil((ai.imageMaxBytes * 4) / 3) + 64 * 1024

/** Options of {@link toolServices}. */
export type ToolServicesOptions = {
  /** The operator's Short.io domain for short links. */
  shortDomain: string
}

function one(
  segment: string,
  name: string,
  summary: string,
  tags: readonly Tag[],
  family: Service['family'],
  upstream: Service['upstream'],
  endpoints: Service['endpoints'],
): Service {
  return { segment, name, summary, tags, family, upstream, endpoints }
}

/** Judge0 to Serper, in the catalog's order (before ScreenshotOne). */
export function toolServices(): Service[] {
  const compute: readonly Tag[] = ['compute']
  const commerce: readonly Tag[] = ['commerce']
  const sa: readonly Tag[] = ['search', 'ai']
  const search: readonly Tag[] = ['search']
  return [
    one(
      'judge0',
      'Judge0',
      'Run source code in 60+ languages',
      compute,
      'judge0',
      { baseUrl: 'https://judge0-ce.p.rapidapi.com', credential: 'RAPIDAPI_KEY' },
      [
        paid('/judge0/v1/submissions', tools.submission, p, compute, 'Run code and wait', {
          operation: 'submit',
        }),
        paid('/judge0/v1/languages', data.empty, p, compute, 'Languages and their ids', {
          operation: 'languages',
        }),
      ],
    ),
    one(
      'lob',
      'Lob',
      'Print and mail postcards and letters; verify US addresses',
      commerce,
      'lob',
      { baseUrl: 'https://api.lob.com/v1', credential: 'LOB_API_KEY' },
      [
        paid('/lob/v1/postcards', tools.postcard, '2.000000', commerce, 'Mail a postcard (US)', {
          operation: 'postcard',
        }),
        paid('/lob/v1/letters', tools.letter, '3.000000', commerce, 'Mail a letter (US)', {
          operation: 'letter',
        }),
        paid('/lob/v1/verify', tools.usAddress, p, commerce, 'Verify a US address', {
          operation: 'verify',
        }),
      ],
    ),
    one(
      'deepl',
      'DeepL',
      'Machine translation',
      ['translation'],
      'deepl',
      { baseUrl: 'https://api-free.deepl.com/v2', credential: 'DEEPL_API_KEY' },
      [
        paid('/deepl/v1/translate', tools.deepl, p, ['translation'], 'Translate text', {
          operation: 'translate',
        }),
      ],
    ),
    one(
      'exa',
      'Exa',
      'Neural web search and page contents',
      sa,
      'exa',
      { baseUrl: 'https://api.exa.ai', credential: 'EXA_API_KEY' },
      [
        paid('/exa/v1/search', web.exaSearch, p, sa, 'Web search', { operation: 'search' }),
        paid('/exa/v1/contents', web.exaContents, p, sa, 'Page contents', {
          operation: 'contents',
        }),
      ],
    ),
    one(
      'jina',
      'Jina Reader',
      'A web page as clean markdown',
      ['web', 'data'],
      'jina',
      { baseUrl: 'https://r.jina.ai', credential: 'JINA_API_KEY' },
      [
        paid('/jina/v1/read', shape.url, p, ['web', 'data'], 'A URL as markdown', {
          operation: 'read',
        }),
      ],
    ),
    one(
      'serper',
      'Serper',
      'Google web and image search',
      search,
      'serper',
      { baseUrl: 'https://google.serper.dev', credential: 'SERPER_API_KEY' },
      [
        paid('/serper/v1/search', web.serper, p, search, 'Google web search', {
          operation: 'search',
        }),
        paid('/serper/v1/images', web.serper, p, search, 'Google image search', {
          operation: 'images',
        }),
      ],
    ),
  ]
}

/** ScreenshotOne, PDFShift and the QR code API. */
export function renderServices(): Service[] {
  return [
    one(
      'screenshot',
      'ScreenshotOne',
      'Screenshots of web pages',
      ['web'],
      'screenshotone',
      { baseUrl: 'https://api.screenshotone.com', credential: 'SCREENSHOTONE_API_KEY' },
      [
        paid('/screenshot/v1/capture', web.screenshot, p, ['web'], 'Screenshot a page', {
          operation: 'capture',
        }),
      ],
    ),
    one(
      'pdfshift',
      'PDFShift',
      'HTML or a URL to PDF',
      ['web', 'data'],
      'pdfshift',
      { baseUrl: 'https://api.pdfshift.io/v3', credential: 'PDFSHIFT_API_KEY' },
      [
        paid(
          '/pdfshift/v1/convert',
          web.pdf,
          p,
          ['web', 'data'],
          'HTML or a URL to PDF',
          { operation: 'convert' },
          2 * 1024 * 1024,
        ),
      ],
    ),
    one(
      'qrcode',
      'QR Code',
      'QR code images',
      ['data'],
      'qrserver',
      { baseUrl: 'https://api.qrserver.com/v1' },
      [
        paid('/qrcode/v1/generate', web.qr, p, ['data'], 'A QR code image', {
          operation: 'generate',
        }),
      ],
    ),
  ]
}

/** Google Translate, Pushover, Mistral and Cohere. */
export function languageServices(): Service[] {
  const tr: readonly Tag[] = ['translation']
  const ai_: readonly Tag[] = ['ai']
  return [
    one(
      'translate',
      'Google Translate',
      'Translation and language detection',
      tr,
      'google-translate',
      {
        baseUrl: 'https://translation.googleapis.com/language/translate/v2',
        credential: 'GOOGLE_TRANSLATE_API_KEY',
      },
      [
        paid('/translate/v1/translate', tools.googleTranslate, p, tr, 'Translate text', {
          operation: 'translate',
        }),
        paid('/translate/v1/detect', tools.detect, p, tr, 'Detect the language', {
          operation: 'detect',
        }),
      ],
    ),
    one(
      'pushover',
      'Pushover',
      'Push notifications to phones and desktops',
      ['messaging'],
      'pushover',
      { baseUrl: 'https://api.pushover.net/1', credential: 'PUSHOVER_API_KEY' },
      [
        paid('/pushover/v1/push', tools.push, p, ['messaging'], 'Send a push notification', {
          operation: 'push',
        }),
      ],
    ),
    one(
      'mistral',
      'Mistral',
      'Chat and embeddings',
      ai_,
      'openai-compatible',
      { baseUrl: 'https://api.mistral.ai/v1', credential: 'MISTRAL_API_KEY' },
      [
        paid('/mistral/v1/chat/completions', shape.chat, p, ai_, 'Chat', {
          operation: 'chat',
          defaults: { model: 'mistral-small-latest' },
        }),
        paid('/mistral/v1/embeddings', shape.embed, p, ai_, 'Embeddings', {
          operation: 'embeddings',
          defaults: { model: 'mistral-embed' },
        }),
      ],
    ),
    one(
      'cohere',
      'Cohere',
      'Chat, embeddings and reranking',
      ai_,
      'cohere',
      { baseUrl: 'https://api.cohere.com/v2', credential: 'COHERE_API_KEY' },
      [
        paid('/cohere/v1/chat', ai.cohereChat, p, ai_, 'Chat', {
          operation: 'chat',
          defaults: { model: 'command-a-03-2025' },
        }),
        paid('/cohere/v1/embed', ai.cohereEmbed, p, ai_, 'Embeddings', {
          operation: 'embed',
          defaults: { model: 'embed-v4.0' },
        }),
        paid('/cohere/v1/rerank', ai.rerank, p, ai_, 'Rerank documents', {
          operation: 'rerank',
          defaults: { model: 'rerank-v3.5' },
        }),
      ],
    ),
  ]
}

/** VirusTotal, then Short.io and Tinify (ExchangeRate-API sits between them in the catalog). */
export function securityServices(): Service[] {
  return [
    one(
      'virustotal',
      'VirusTotal',
      'URL and file reputation',
      ['security'],
      'virustotal',
      { baseUrl: 'https://www.virustotal.com/api/v3', credential: 'VIRUSTOTAL_API_KEY' },
      [
        paid('/virustotal/v1/scan', web.scan, p, ['security'], 'Report on a URL or file hash', {
          operation: 'scan',
        }),
      ],
    ),
  ]
}

/** Short.io and Tinify. */
export function utilityServices(options: ToolServicesOptions): Service[] {
  const utility: readonly Tag[] = ['utility']
  return [
    one(
      'shortio',
      'Short.io',
      'Short links',
      utility,
      'shortio',
      { baseUrl: 'https://api.short.io', credential: 'SHORTIO_API_KEY' },
      [
        paid('/shortio/v1/shorten', web.shorten, p, utility, 'Shorten a URL', {
          operation: 'shorten',
          params: { domain: options.shortDomain },
        }),
      ],
    ),
    one(
      'tinify',
      'Tinify',
      'Image compression and resizing (TinyPNG)',
      utility,
      'tinify',
      { baseUrl: 'https://api.tinify.com', credential: 'TINIFY_API_KEY' },
      [
        paid(
          '/tinify/v1/compress',
          web.compress,
          p,
          utility,
          'Compress an image',
          { operation: 'compress' },
          imageBody,
        ),
        paid(
          '/tinify/v1/resize',
          web.resize,
          p,
          utility,
          'Compress and resize an image',
          { operation: 'resize' },
          imageBody,
        ),
      ],
    ),
  ]
}
