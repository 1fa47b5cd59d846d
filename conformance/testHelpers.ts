/**
 * Set-up the conformance tests share (no user needs it): a strict XML 1.0 well-formedness check for
 * the JUnit reporter's output, by `saxes`, a conformant non-validating XML parser.
 *
 * @module
 */
import { SaxesParser } from 'saxes'

/** The element names of a well-formed XML document in document order; throws on the first error. */
export function checkWellFormedXml(xml: string): string[] {
  const parser = new SaxesParser({ xmlns: false, position: true })
  const elements: string[] = []
  parser.on('opentag', (tag) => elements.push(tag.name))
  parser.on('error', (error) => {
    throw error
  })
  parser.write(xml).close()
  return elements
}
