/**
 * Every upstream family module by id, and the operations each offers (for catalog validation).
 *
 * @module
 */
import type { FamilyId } from '../catalog/catalog.js'
import { anthropic } from './anthropic.js'
import { brave } from './brave.js'
import { fal } from './fal.js'
import { firecrawl } from './firecrawl.js'
import { gemini } from './gemini.js'
import { assemblyai, replicate } from './jobApis.js'
import { elevenlabs, pdfshift, qrserver, screenshotone, stability, tinify } from './mediaApis.js'
import { openai } from './openai.js'
import { openaiCompatible } from './openaiCompatible.js'
import {
  alphavantage,
  coingecko,
  exchangerate,
  googlemaps,
  hunter,
  ipinfo,
  newsapi,
  openweather,
  serpapi,
} from './queryApis.js'
import { resend } from './resend.js'
import { judge0, lob, pushover, shortio, virustotal } from './serviceApis.js'
import { cohere, deepl, exa, googleTranslate, jina, serper } from './textApis.js'
import type { Family } from './upstream.js'

/** The family modules by id. */
export const families: Readonly<Record<FamilyId, Family>> = {
  openai,
  anthropic,
  gemini,
  fal,
  firecrawl,
  brave,
  resend,
  'openai-compatible': openaiCompatible,
  elevenlabs,
  openweather,
  googlemaps,
  judge0,
  lob,
  coingecko,
  alphavantage,
  newsapi,
  deepl,
  exa,
  jina,
  serper,
  screenshotone,
  pdfshift,
  qrserver,
  replicate,
  stability,
  assemblyai,
  hunter,
  ipinfo,
  'google-translate': googleTranslate,
  serpapi,
  pushover,
  cohere,
  virustotal,
  exchangerate,
  shortio,
  tinify,
}

/** Operation ids per family, for `validateCatalog({ operations })`. */
export const familyOperations: Readonly<Partial<Record<FamilyId, readonly string[]>>> =
  Object.fromEntries(
    Object.entries(families).map(([id, family]) => [id, Object.keys(family.operations)]),
  )
