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
import { openai } from './openai.js'
import { openaiCompatible } from './openai-compatible.js'
import { resend } from './resend.js'
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
}

/** Operation ids per family, for `validateCatalog({ operations })`. */
export const familyOperations: Readonly<Record<FamilyId, readonly string[]>> = Object.fromEntries(
  Object.entries(families).map(([id, family]) => [id, Object.keys(family.operations)]),
) as unknown as Record<FamilyId, readonly string[]>
