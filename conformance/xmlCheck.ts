/**
 * A small strict XML 1.0 well-formedness check for the JUnit reporter's tests: one root element,
 * properly nested and matched tags, quoted attributes without `<`, no duplicate attributes, only
 * the five predefined or numeric entity references, only characters XML allows. Returns the element
 * names in document order, or throws with the offset of the first problem.
 *
 * @module
 */

const name = /^[A-Za-z_:][-A-Za-z0-9_:.]*/
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the characters XML forbids
const badChar = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u

function checkText(text: string, at: number): void {
  if (badChar.test(text)) throw new Error(`character not allowed in XML near ${at}`)
  if (text.includes('<')) throw new Error(`raw < near ${at}`)
  for (const match of text.matchAll(/&([^;]*);?/g)) {
    const ref = match[0]
    if (!/^&(amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});$/.test(ref)) {
      throw new Error(`bad entity reference ${JSON.stringify(ref.slice(0, 12))} near ${at}`)
    }
  }
}

/** Checks that `xml` is well-formed; returns the element names in order. */
export function checkWellFormedXml(xml: string): string[] {
  let i = 0
  const elements: string[] = []
  const stack: string[] = []
  let rootClosed = false
  if (xml.startsWith('<?xml')) {
    const end = xml.indexOf('?>')
    if (end < 0) throw new Error('unterminated XML declaration')
    i = end + 2
  }
  while (i < xml.length) {
    const lt = xml.indexOf('<', i)
    const text = xml.slice(i, lt < 0 ? xml.length : lt)
    if (stack.length === 0 && text.trim() !== '') throw new Error(`text outside the root near ${i}`)
    checkText(text, i)
    if (lt < 0) break
    i = lt
    if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i + 4)
      if (end < 0) throw new Error(`unterminated comment at ${i}`)
      i = end + 3
      continue
    }
    if (xml.startsWith('</', i)) {
      const m = name.exec(xml.slice(i + 2))
      const closing = m?.[0]
      if (closing === undefined) throw new Error(`bad closing tag at ${i}`)
      const after = i + 2 + closing.length
      const gt = xml.indexOf('>', after)
      if (gt < 0 || xml.slice(after, gt).trim() !== '') throw new Error(`bad closing tag at ${i}`)
      if (stack.pop() !== closing) throw new Error(`mismatched </${closing}> at ${i}`)
      if (stack.length === 0) rootClosed = true
      i = gt + 1
      continue
    }
    if (rootClosed) throw new Error(`a second root element at ${i}`)
    const m = name.exec(xml.slice(i + 1))
    const tag = m?.[0]
    if (tag === undefined) throw new Error(`bad tag at ${i}`)
    elements.push(tag)
    let j = i + 1 + tag.length
    const seenAttributes = new Set<string>()
    for (;;) {
      const ws = /^\s*/.exec(xml.slice(j))?.[0].length ?? 0
      j += ws
      if (xml.startsWith('/>', j)) {
        j += 2
        if (stack.length === 0) rootClosed = true
        break
      }
      if (xml[j] === '>') {
        stack.push(tag)
        j += 1
        break
      }
      if (ws === 0) throw new Error(`attributes must be separated by space at ${j}`)
      const attribute = name.exec(xml.slice(j))?.[0]
      if (attribute === undefined) throw new Error(`bad attribute at ${j}`)
      if (seenAttributes.has(attribute)) throw new Error(`duplicate attribute ${attribute} at ${j}`)
      seenAttributes.add(attribute)
      j += attribute.length
      if (xml[j] !== '=') throw new Error(`attribute without value at ${j}`)
      const quote = xml[j + 1]
      if (quote !== '"' && quote !== "'") throw new Error(`unquoted attribute at ${j}`)
      const close = xml.indexOf(quote, j + 2)
      if (close < 0) throw new Error(`unterminated attribute at ${j}`)
      checkText(xml.slice(j + 2, close), j)
      j = close + 1
    }
    i = j
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.at(-1)}>`)
  if (!rootClosed) throw new Error('no root element')
  return elements
}
