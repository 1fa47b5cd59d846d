/**
 * Request shapes of the web services: Exa, Jina Reader, Serper, ScreenshotOne, PDFShift, QR codes,
 * VirusTotal, Short.io and Tinify.
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from './shapes.js'
import { fileField, httpUrl } from './shapes.js'
import { imageMaxBytes } from './shapesAi.js'

const domains = z
  .array(z.string().regex(/^[a-z0-9.-]{1,253}$/i, 'must be a domain name'))
  .min(1)
  .max(100)

/** Shape EXA-SEARCH: Exa web search, optionally with page text. */
export const exaSearch: Shape = {
  name: 'EXA-SEARCH',
  description:
    'Search: query, optional type (auto, neural, keyword, fast), numResults (1–25), include/exclude domains, contents.text',
  schema: z.object({
    query: z.string().trim().min(1).max(2000),
    type: z.enum(['auto', 'neural', 'keyword', 'fast']).optional(),
    numResults: z.int().min(1).max(25).optional(),
    category: z
      .enum(['company', 'research paper', 'news', 'pdf', 'github', 'tweet', 'personal site'])
      .optional(),
    includeDomains: domains.optional(),
    excludeDomains: domains.optional(),
    contents: z.object({ text: z.boolean().optional() }).optional(),
  }),
  example: { query: 'stablecoin payments for AI agents', numResults: 5 },
}

/** Shape EXA-CONTENTS: page contents of URLs. */
export const exaContents: Shape = {
  name: 'EXA-CONTENTS',
  description: 'Page contents: urls (1–25), optional text (default true)',
  schema: z.object({
    urls: z.array(httpUrl).min(1).max(25),
    text: z.boolean().optional(),
  }),
  example: { urls: ['https://example.com'] },
}

/** Shape SERPER: a Google search (web or images) through Serper. */
export const serper: Shape = {
  name: 'SERPER',
  description: 'Google search: q, optional gl, hl, num (1–100), page, location',
  schema: z.object({
    q: z.string().trim().min(1).max(2048),
    gl: z
      .string()
      .regex(/^[a-z]{2}$/i)
      .optional(),
    hl: z
      .string()
      .regex(/^[a-z]{2}(?:-[a-z]{2})?$/i)
      .optional(),
    num: z.int().min(1).max(100).optional(),
    page: z.int().min(1).max(100).optional(),
    location: z.string().min(1).max(200).optional(),
  }),
  example: { q: 'sui blockchain usdc', num: 10 },
}

/** Shape SCREENSHOT: a web page rendered to an image; returned as `{ url }`. */
export const screenshot: Shape = {
  name: 'SCREENSHOT',
  description:
    'Screenshot of a page: url, optional format (png, jpeg, webp), full_page, viewport_width/height, device_scale_factor, block_ads, delay (s); the image returned as { url }',
  schema: z.object({
    url: httpUrl,
    format: z.enum(['png', 'jpeg', 'webp']).optional(),
    full_page: z.boolean().optional(),
    viewport_width: z.int().min(320).max(3840).optional(),
    viewport_height: z.int().min(240).max(2160).optional(),
    device_scale_factor: z.int().min(1).max(3).optional(),
    block_ads: z.boolean().optional(),
    delay: z.int().min(0).max(10).optional(),
  }),
  example: { url: 'https://example.com', viewport_width: 1280, viewport_height: 800 },
}

/** Paper formats of PDF. */
export const paperFormats = ['A3', 'A4', 'A5', 'Letter', 'Legal', 'Tabloid'] as const

/** Shape PDF: a URL or HTML rendered to PDF; returned as `{ url }`. */
export const pdf: Shape = {
  name: 'PDF',
  description:
    'HTML or URL to PDF: source (an http(s) URL or HTML, ≤ 1 MB), optional landscape, format, use_print; the PDF returned as { url }',
  schema: z.object({
    source: z.string().min(1).max(1_000_000),
    landscape: z.boolean().optional(),
    format: z.enum(paperFormats).optional(),
    use_print: z.boolean().optional(),
  }),
  example: { source: 'https://example.com', format: 'A4' },
}

const hexColor = z
  .string()
  .regex(/^[0-9a-fA-F]{6}$/, 'must be a hex color like 000000')
  .optional()

/** Shape QR: a QR code image; returned as `{ url }`. */
export const qr: Shape = {
  name: 'QR',
  description:
    'QR code: data (≤ 900 characters), optional size (10–1000 px), format (png, svg, jpg, gif), ecc (L, M, Q, H), color, bgcolor, margin; the image returned as { url }',
  schema: z.object({
    data: z.string().min(1).max(900),
    size: z.int().min(10).max(1000).optional(),
    format: z.enum(['png', 'svg', 'jpg', 'gif']).optional(),
    ecc: z.enum(['L', 'M', 'Q', 'H']).optional(),
    color: hexColor,
    bgcolor: hexColor,
    margin: z.int().min(0).max(50).optional(),
  }),
  example: { data: 'https://example.com', size: 300 },
}

/** Shape SCAN: a URL or a file hash, checked against VirusTotal. */
export const scan: Shape = {
  name: 'SCAN',
  description:
    'Security report: url, or hash (MD5, SHA-1 or SHA-256), not both; an unknown URL is submitted and answered queued',
  schema: z
    .object({
      url: httpUrl.optional(),
      hash: z
        .string()
        .regex(
          /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/,
          'must be an MD5, SHA-1 or SHA-256 hex digest',
        )
        .optional(),
    })
    .refine((b) => (b.url === undefined) !== (b.hash === undefined), {
      message: 'exactly one of url and hash is required',
      path: ['url'],
    }),
  example: { url: 'https://example.com' },
}

/** Shape SHORTEN: a short link for a URL. */
export const shorten: Shape = {
  name: 'SHORTEN',
  description: 'Short link: url, optional path (the slug) and title',
  schema: z.object({
    url: httpUrl,
    path: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be letters, digits, _ or -')
      .optional(),
    title: z.string().min(1).max(200).optional(),
  }),
  example: { url: 'https://example.com/a/very/long/path' },
}

/** Shape COMPRESS: an image (URL or base64) made smaller; returned as `{ url }`. */
export const compress: Shape = {
  name: 'COMPRESS',
  description:
    'Compress a PNG, JPEG or WebP image: image (URL or base64, ≤ 10 MiB); the result returned as { url } with the sizes',
  schema: z.object({ image: fileField(imageMaxBytes, 'image') }),
  example: { image: 'https://example.com/images/photo.png' },
}

/** Resize methods of RESIZE. */
export const resizeMethods = ['scale', 'fit', 'cover', 'thumb'] as const
const side = z.int().min(1).max(10_000)

/**
 * Shape RESIZE: an image compressed and resized. `scale` takes exactly one of width and height;
 * `fit`, `cover` and `thumb` take both.
 */
export const resize: Shape = {
  name: 'RESIZE',
  description:
    'Resize an image: image (URL or base64), method (scale: width or height; fit, cover, thumb: both), width, height; the result returned as { url }',
  schema: z
    .object({
      image: fileField(imageMaxBytes, 'image'),
      method: z.enum(resizeMethods),
      width: side.optional(),
      height: side.optional(),
    })
    .refine(
      (b) =>
        b.method === 'scale'
          ? (b.width === undefined) !== (b.height === undefined)
          : b.width !== undefined && b.height !== undefined,
      {
        message: 'scale takes exactly one of width and height; fit, cover and thumb take both',
        path: ['width'],
      },
    ),
  example: {
    image: 'https://example.com/images/photo.png',
    method: 'fit',
    width: 150,
    height: 100,
  },
}
