/**
 * The shared decoding pipeline for untrusted headers: size limit first, then strict base64 /
 * base64url, then strict UTF-8, then JSON, then a zod schema. Every failure is a
 * {@link PaymentError} with a stable code; nothing else escapes.
 *
 * @module
 * @internal
 */
import type { z } from 'zod'
import { PaymentError, type PaymentErrorCode } from '../errors.js'
import { decodeBase64, decodeBase64url } from './base64.js'

/** Largest header value accepted (16 KiB), checked before any decoding. */
export const maxHeaderLength = 16 * 1024

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Throws `header_too_large` when `value` is longer than the limit. Header values are ISO-8859-1, so characters = bytes. */
export function checkHeaderSize(value: string, header: string, limit = maxHeaderLength): void {
  if (value.length > limit) {
    throw new PaymentError(
      'header_too_large',
      `The ${header} header is larger than ${limit} bytes.`,
      {
        details: { header, length: value.length, limit },
      },
    )
  }
}

/** Options of {@link decodeJsonHeader}. */
export type DecodeJsonOptions = {
  /** Header name, for messages. */
  header: string
  /** `base64` (padded, standard alphabet) or `base64url` (unpadded, URL alphabet). */
  encoding: 'base64' | 'base64url'
  /** The code for anything that is not a well-formed value. Default: `invalid_encoding`/`invalid_json`. */
  code?: PaymentErrorCode
}

/** Decodes a size-checked, strictly encoded JSON header value. */
export function decodeJsonHeader(value: string, options: DecodeJsonOptions): unknown {
  checkHeaderSize(value, options.header)
  const bytes = options.encoding === 'base64' ? decodeBase64(value) : decodeBase64url(value)
  if (bytes === undefined || bytes.length === 0) {
    throw new PaymentError(
      options.code ?? 'invalid_encoding',
      `The ${options.header} header is not canonical ${options.encoding}.`,
      { details: { header: options.header } },
    )
  }
  return parseJson(bytes, options.header, options.code)
}

/** Parses strict UTF-8 JSON bytes. */
export function parseJson(bytes: Uint8Array, what: string, code?: PaymentErrorCode): unknown {
  try {
    return JSON.parse(utf8.decode(bytes))
  } catch (cause) {
    throw new PaymentError(code ?? 'invalid_json', `The ${what} is not UTF-8 JSON.`, {
      details: { header: what },
      cause,
    })
  }
}

/** Maps the first zod issue at a top-level key to a code; everything else gets `fallback`. */
export type IssueCodes = Readonly<Record<string, PaymentErrorCode>>

/**
 * Parses `input` with `schema`; on failure throws a {@link PaymentError} whose code comes from
 * `codes[first path key]` or `fallback`. Details name the failing paths (never the values).
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  what: string,
  fallback: PaymentErrorCode,
  codes: IssueCodes = {},
): z.infer<S> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const issues = result.error.issues
  let code = fallback
  for (const issue of issues) {
    const key = issue.path[0]
    // A wrong value of a mapped key gets its code; a missing key is just an invalid payload.
    const present =
      typeof key === 'string' && typeof input === 'object' && input !== null && key in input
    const mapped = present ? codes[key] : undefined
    if (mapped !== undefined) {
      code = mapped
      break
    }
  }
  const paths = issues.slice(0, 5).map((issue) => issue.path.join('.') || '(root)')
  throw new PaymentError(code, `The ${what} does not match the schema (${paths.join(', ')}).`, {
    details: { paths },
    cause: result.error,
  })
}
