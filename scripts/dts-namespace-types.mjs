/**
 * Runs after tsup (`npm run build`): repairs the namespaces of the bundled declaration files.
 *
 * tsup rolls each entry's declarations up with rollup-plugin-dts. When a namespace
 * (`export * as Attestation from './attestation/index.js'`) holds a TYPE that rollup put into a
 * chunk shared with another entry, the namespace member comes out as a value,
 * `declare const index_TdxCollateral: typeof TdxCollateral`, which does not type-check (TS2693)
 * for a consumer with `skipLibCheck: false`. This script finds each such member, looks the imported
 * name up in its chunk, and when it is a type there rewrites the member as a type alias and its
 * export as `type`. It fails on anything it cannot rewrite, so the smoke test's type check stays
 * the judge. Usage: `node scripts/dts-namespace-types.mjs [dist]`.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dist = process.argv[2] ?? 'dist'
const files = readdirSync(dist).filter((file) => /\.d\.c?ts$/.test(file))

/** `{ a as B, c }` → Map(local B → exported a) for an import, or exported → local for an export. */
function bindings(list) {
  return list
    .split(',')
    .map((part) => part.trim().replace(/^type\s+/, ''))
    .filter(Boolean)
    .map((part) => {
      const [left, right] = part.split(/\s+as\s+/)
      return [left, right ?? left]
    })
}

const typeDeclaration = (text, name) =>
  new RegExp(
    // Not \b: `$` is not a word character, so `x402v2\b` would match `x402v2$1_Foo`.
    `^(?:export )?(?:declare )?(?:type|interface) ${name.replace(/\$/g, '\\$')}(?![\\w$])`,
    'm',
  ).test(text)
const genericDeclaration = (text, name) =>
  new RegExp(
    `^(?:export )?(?:declare )?(?:type|interface) ${name.replace(/\$/g, '\\$')}<`,
    'm',
  ).test(text)

let repaired = 0
for (const file of files) {
  const path = join(dist, file)
  let text = readFileSync(path, 'utf8')
  const imported = new Map()
  for (const [, list, from] of text.matchAll(/^import \{([^}]*)\} from '(\.\/[^']+)';$/gm)) {
    for (const [name, local] of bindings(list)) imported.set(local, { name, from })
  }
  const members = [...text.matchAll(/^declare const ([\w$]+): typeof ([\w$]+);$/gm)]
  for (const [line, member, target] of members) {
    const source = imported.get(target)
    if (source === undefined) continue
    const chunk = readFileSync(
      join(dist, source.from.replace(/\.cjs$/, '.d.cts').replace(/\.js$/, '.d.ts')),
      'utf8',
    )
    const exportList = [...chunk.matchAll(/^export \{([^}]*)\};$/gm)].flatMap(([, list]) =>
      bindings(list),
    )
    const local = exportList.find(([, exported]) => exported === source.name)?.[0]
    if (local === undefined) throw new Error(`${file}: ${target} is not exported by ${source.from}`)
    if (!typeDeclaration(chunk, local)) continue
    if (genericDeclaration(chunk, local)) {
      throw new Error(`${file}: ${member} aliases the generic type ${target}: not rewritten`)
    }
    text = text.replace(line, `type ${member} = ${target};`)
    text = text.replace(
      new RegExp(`(?<!type )\\b${member.replace(/\$/g, '\\$')} as `, 'g'),
      `type ${member} as `,
    )
    repaired++
  }
  writeFileSync(path, text)
}
process.stdout.write(`dts-namespace-types: ${repaired} namespace members made types again\n`)
