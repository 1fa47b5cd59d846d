/**
 * Request shapes of the messaging, translation, compute and commerce services: Resend batches,
 * Pushover, DeepL, Google Translate, Judge0 and Lob.
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from './shapes.js'
import { email, httpUrl } from './shapes.js'

/** Shape EMAIL-BATCH: up to 100 e-mails in one call. */
export const emailBatch: Shape = {
  name: 'EMAIL-BATCH',
  description: 'Up to 100 e-mails: emails (each from, to, subject, html and/or text)',
  schema: z.object({ emails: z.array(email.schema).min(1).max(100) }),
  example: {
    emails: [
      { from: 'Tollgate <hello@example.com>', to: 'a@example.org', subject: 'Hi', text: 'One' },
      { from: 'Tollgate <hello@example.com>', to: 'b@example.org', subject: 'Hi', text: 'Two' },
    ],
  },
}

/** Shape PUSH: a Pushover notification to a user or group key. */
export const push: Shape = {
  name: 'PUSH',
  description:
    'Push notification: user (30-character user or group key), message (≤ 1024), optional title, url, url_title, priority (-2 to 2; 2 needs retry ≥ 30 and expire ≤ 10800), sound, device, ttl',
  schema: z
    .object({
      user: z.string().regex(/^[A-Za-z0-9]{30}$/, 'must be a 30-character Pushover user key'),
      message: z.string().min(1).max(1024),
      title: z.string().min(1).max(250).optional(),
      url: httpUrl.optional(),
      url_title: z.string().min(1).max(100).optional(),
      priority: z.int().min(-2).max(2).optional(),
      retry: z.int().min(30).max(10_800).optional(),
      expire: z.int().min(1).max(10_800).optional(),
      sound: z
        .string()
        .regex(/^[a-z0-9_]{1,32}$/)
        .optional(),
      device: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,25}$/)
        .optional(),
      ttl: z.int().min(1).max(31_536_000).optional(),
    })
    .refine((b) => b.priority !== 2 || (b.retry !== undefined && b.expire !== undefined), {
      message: 'priority 2 needs retry and expire',
      path: ['retry'],
    }),
  example: { user: 'uQiRzpo4DXghDmr9QzzfQu27cmVRsG', message: 'Build finished', title: 'CI' },
}

/** DeepL source languages. */
// biome-ignore format: a table reads better packed
export const deeplSources = [
  'AR', 'BG', 'CS', 'DA', 'DE', 'EL', 'EN', 'ES', 'ET', 'FI', 'FR', 'HU', 'ID', 'IT', 'JA', 'KO',
  'LT', 'LV', 'NB', 'NL', 'PL', 'PT', 'RO', 'RU', 'SK', 'SL', 'SV', 'TR', 'UK', 'ZH',
] as const
/** DeepL target languages. */
// biome-ignore format: a table reads better packed
export const deeplTargets = [
  'AR', 'BG', 'CS', 'DA', 'DE', 'EL', 'EN-GB', 'EN-US', 'ES', 'ET', 'FI', 'FR', 'HU', 'ID', 'IT',
  'JA', 'KO', 'LT', 'LV', 'NB', 'NL', 'PL', 'PT-BR', 'PT-PT', 'RO', 'RU', 'SK', 'SL', 'SV', 'TR',
  'UK', 'ZH', 'ZH-HANS', 'ZH-HANT',
] as const

const texts = z.union([
  z.string().min(1).max(100_000),
  z.array(z.string().min(1).max(100_000)).min(1).max(50),
])

/** Shape DEEPL: DeepL translation. */
export const deepl: Shape = {
  name: 'DEEPL',
  description:
    'Translation: text (a string or up to 50), target_lang (e.g. DE, EN-US, PT-BR), optional source_lang, formality, context',
  schema: z.object({
    text: texts,
    target_lang: z.enum(deeplTargets, 'must be a DeepL target language like DE or EN-US'),
    source_lang: z.enum(deeplSources, 'must be a DeepL source language like EN').optional(),
    formality: z.enum(['default', 'more', 'less', 'prefer_more', 'prefer_less']).optional(),
    context: z.string().max(10_000).optional(),
  }),
  example: { text: 'Hello, world', target_lang: 'DE' },
}

const languageCode = z
  .string()
  .regex(/^[a-z]{2,3}(?:-[A-Za-z]{2,4})?$/, 'must be a language code like de or zh-TW')

/** Shape TRANSLATE: Google Translate (v2). */
export const googleTranslate: Shape = {
  name: 'TRANSLATE',
  description:
    'Translation: q (a string or up to 128), target language code, optional source, format (text, html)',
  schema: z.object({
    q: z.union([
      z.string().min(1).max(30_000),
      z.array(z.string().min(1).max(30_000)).min(1).max(128),
    ]),
    target: languageCode,
    source: languageCode.optional(),
    format: z.enum(['text', 'html']).optional(),
  }),
  example: { q: 'Hello, world', target: 'de' },
}

/** Shape DETECT: Google Translate language detection. */
export const detect: Shape = {
  name: 'DETECT',
  description: 'Language detection: q (a string or up to 128)',
  schema: z.object({
    q: z.union([
      z.string().min(1).max(30_000),
      z.array(z.string().min(1).max(30_000)).min(1).max(128),
    ]),
  }),
  example: { q: 'Bonjour tout le monde' },
}

/** Largest source code or stdin of a submission, in characters. */
export const codeMax = 64 * 1024

/** Shape SUBMISSION: a Judge0 run of source code, waited for. */
export const submission: Shape = {
  name: 'SUBMISSION',
  description:
    'Run code: source_code, language_id (see /v1/languages), optional stdin, expected_output, cpu_time_limit (s, ≤ 15), memory_limit (KB, 2048–512000)',
  schema: z.object({
    source_code: z.string().min(1).max(codeMax),
    language_id: z.int().min(1).max(1000),
    stdin: z.string().max(codeMax).optional(),
    expected_output: z.string().max(codeMax).optional(),
    cpu_time_limit: z.number().positive().max(15).optional(),
    memory_limit: z.int().min(2048).max(512_000).optional(),
  }),
  example: { source_code: 'print("hello")', language_id: 71 },
}

const line = (max: number) => z.string().trim().min(1).max(max)
const usState = z.string().regex(/^[A-Z]{2}$/, 'must be a two-letter state code')
const usZip = z.string().regex(/^\d{5}(?:-\d{4})?$/, 'must be a ZIP or ZIP+4 code')

/** A US postal address as Lob takes it. */
export const address = z.object({
  name: line(40).optional(),
  company: line(40).optional(),
  address_line1: line(64),
  address_line2: line(64).optional(),
  address_city: line(200),
  address_state: usState,
  address_zip: usZip,
  address_country: z.literal('US').optional(),
})

const useType = z.enum(['marketing', 'operational'])
const artwork = z
  .string()
  .min(1)
  .max(10_000)
  .describe('HTML, or an http(s) URL of a PDF, PNG or JPEG')

const exampleTo = {
  name: 'Harry Zhang',
  address_line1: '210 King St',
  address_city: 'San Francisco',
  address_state: 'CA',
  address_zip: '94107',
}

/** Shape POSTCARD: a printed and mailed postcard (US). */
export const postcard: Shape = {
  name: 'POSTCARD',
  description:
    'Mail a postcard: to (US address), optional from, front and back (HTML or artwork URL), size (4x6, 6x9, 6x11), use_type (marketing, operational)',
  schema: z.object({
    to: address,
    from: address.optional(),
    front: artwork,
    back: artwork,
    size: z.enum(['4x6', '6x9', '6x11']).optional(),
    use_type: useType,
    description: z.string().max(255).optional(),
  }),
  example: {
    to: exampleTo,
    front: '<html><body>Hello</body></html>',
    back: '<html><body>From Tollgate</body></html>',
    use_type: 'operational',
  },
}

/** Shape LETTER: a printed and mailed letter (US). */
export const letter: Shape = {
  name: 'LETTER',
  description:
    'Mail a letter: to and from (US addresses), file (HTML or PDF URL), color, optional double_sided, address_placement, use_type',
  schema: z.object({
    to: address,
    from: address,
    file: artwork,
    color: z.boolean(),
    double_sided: z.boolean().optional(),
    address_placement: z.enum(['top_first_page', 'insert_blank_page']).optional(),
    use_type: useType,
    description: z.string().max(255).optional(),
  }),
  example: {
    to: exampleTo,
    from: { ...exampleTo, name: 'Tollgate' },
    file: '<html><body>Dear Harry,</body></html>',
    color: false,
    use_type: 'operational',
  },
}

/** Shape US-ADDRESS: a US address to verify (a ZIP code, or city and state). */
export const usAddress: Shape = {
  name: 'US-ADDRESS',
  description:
    'Verify a US address: primary_line, optional secondary_line, and zip_code or city and state',
  schema: z
    .object({
      primary_line: line(500),
      secondary_line: line(500).optional(),
      city: line(200).optional(),
      state: usState.optional(),
      zip_code: usZip.optional(),
    })
    .refine((b) => b.zip_code !== undefined || (b.city !== undefined && b.state !== undefined), {
      message: 'zip_code, or city and state, is required',
      path: ['zip_code'],
    }),
  example: { primary_line: '210 King St', zip_code: '94107' },
}
