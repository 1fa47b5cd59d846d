/**
 * Move type tags as the SDK prints them from BCS: a struct (`0x2::sui::SUI`), a primitive (`u64`),
 * a vector (`vector<u8>`) — any of them may appear as a type argument of a Move call a buyer signs.
 *
 * @module
 */
import { TypeTagSerializer } from '@mysten/sui/bcs'

/**
 * The canonical text of a type tag (addresses padded to 32 bytes), or `undefined` when `text` is
 * not a type tag. Never throws: primitives and vectors are normalised as well as structs.
 */
export function normalizeTypeTag(text: string): string | undefined {
  try {
    return TypeTagSerializer.tagToString(TypeTagSerializer.parseFromStr(text, true))
  } catch {
    return undefined
  }
}
