/**
 * The public API report: every name each public subpath exports, with its signature, written to
 * `api/<subpath>.api.md`. `npm run api:report` writes the files; `scripts/apiReport.test.ts`
 * fails when the code and the checked-in report differ, so an API change is always a reviewed diff.
 *
 * Made with the TypeScript compiler the project already uses rather than API Extractor: API
 * Extractor takes one entry point per run and leaves the members of `export * as Ns` namespaces out
 * of its report (microsoft/rushstack#2798), and the root export is mostly namespaces.
 *
 * Usage: `tsx scripts/apiReport.ts` (write) or `tsx scripts/apiReport.ts --check` (exit 1 on a
 * difference).
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { type UnexportedReference, unexportedReferences } from './apiReachability.js'
import { repositoryRoot, subpaths } from './subpaths.js'

/** Where the reports live. */
export const reportFolder = join(repositoryRoot, 'api')

/** The report file of a subpath: `tollgate/stores/sqlite` → `tollgate-stores-sqlite.api.md`. */
export function reportFileName(subpath: string): string {
  return `${subpath.replace(/\//g, '-')}.api.md`
}

const printer = ts.createPrinter({ removeComments: true })
const typeFlags =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope |
  ts.TypeFormatFlags.WriteArrowStyleSignature
/** Longest type text written out; a longer one is cut and its hash appended, so it still diffs. */
const maxTypeText = 240

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ')
  if (flat.length <= maxTypeText) return flat
  const hash = createHash('sha256').update(flat).digest('hex').slice(0, 12)
  return `${flat.slice(0, maxTypeText)}… [${flat.length} chars, sha256 ${hash}]`
}

function describe(
  checker: ts.TypeChecker,
  name: string,
  exported: ts.Symbol,
  indent: string,
): string[] {
  const symbol =
    exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
  const lines: string[] = []
  const declarations = symbol.declarations ?? []
  const first = declarations[0]
  if (first && (ts.isSourceFile(first) || ts.isModuleDeclaration(first))) {
    lines.push(`${indent}namespace ${name} {`)
    for (const member of sortedExports(checker, symbol))
      lines.push(...describe(checker, member.name, member, `${indent}  `))
    lines.push(`${indent}}`)
    return lines
  }
  if (symbol.flags & ts.SymbolFlags.Function && first) {
    const type = checker.getTypeOfSymbolAtLocation(symbol, first)
    for (const signature of type.getCallSignatures())
      lines.push(
        `${indent}function ${name}${clip(checker.signatureToString(signature, undefined, typeFlags))}`,
      )
  }
  for (const declaration of declarations) {
    if (
      ts.isInterfaceDeclaration(declaration) ||
      ts.isTypeAliasDeclaration(declaration) ||
      ts.isEnumDeclaration(declaration)
    ) {
      const text = printer.printNode(
        ts.EmitHint.Unspecified,
        declaration,
        declaration.getSourceFile(),
      )
      const body = text.replace(/^export\s+(declare\s+)?/, '').replace(/\n/g, `\n${indent}`)
      lines.push(`${indent}${body.replace(/^(type|interface|enum) \S+?(?=[<\s{=])/, `$1 ${name}`)}`)
    } else if (ts.isClassDeclaration(declaration)) {
      lines.push(`${indent}class ${name} {`)
      const constructorType = checker.getTypeOfSymbolAtLocation(symbol, declaration)
      for (const signature of constructorType.getConstructSignatures())
        lines.push(
          `${indent}  constructor${clip(checker.signatureToString(signature, undefined, typeFlags))}`,
        )
      const instance = checker.getDeclaredTypeOfSymbol(symbol)
      for (const property of [...checker.getPropertiesOfType(instance)].sort(byName)) {
        const modifiers = ts.getCombinedModifierFlags(property.valueDeclaration ?? declaration)
        if (modifiers & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue
        if (property.name.startsWith('#')) continue
        const type = checker.getTypeOfSymbolAtLocation(property, declaration)
        lines.push(
          `${indent}  ${property.name}: ${clip(checker.typeToString(type, undefined, typeFlags))}`,
        )
      }
      lines.push(`${indent}}`)
    } else if (ts.isVariableDeclaration(declaration)) {
      const type = checker.getTypeOfSymbolAtLocation(symbol, declaration)
      lines.push(
        `${indent}const ${name}: ${clip(checker.typeToString(type, undefined, typeFlags))}`,
      )
    }
  }
  if (lines.length === 0) lines.push(`${indent}${ts.SymbolFlags[symbol.flags] ?? 'symbol'} ${name}`)
  return lines
}

function byName(a: ts.Symbol, b: ts.Symbol): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

function sortedExports(checker: ts.TypeChecker, module: ts.Symbol): ts.Symbol[] {
  return [...checker.getExportsOfModule(module)].sort(byName)
}

/** The program of the public subpaths' source files, as tsconfig.json compiles them. */
export function apiProgram(): ts.Program {
  const configPath = join(repositoryRoot, 'tsconfig.json')
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
      },
    },
  )
  if (!config) throw new Error('tsconfig.json could not be read')
  return ts.createProgram(entryFiles(), { ...config.options, noEmit: true })
}

function entryFiles(): string[] {
  return Object.values(subpaths).map((file) => join(repositoryRoot, file))
}

/** Public names that refer to a type of the project's own that no subpath exports. */
export function publicHoles(program: ts.Program = apiProgram()): UnexportedReference[] {
  return unexportedReferences(program, entryFiles(), repositoryRoot)
}

/** Every subpath's report, by file name. */
export function apiReports(program: ts.Program = apiProgram()): Map<string, string> {
  const checker = program.getTypeChecker()
  const reports = new Map<string, string>()
  for (const [subpath, file] of Object.entries(subpaths)) {
    const source = program.getSourceFile(join(repositoryRoot, file))
    const module = source && checker.getSymbolAtLocation(source)
    if (!module) throw new Error(`${subpath}: ${file} exports nothing`)
    const lines = sortedExports(checker, module).flatMap((symbol) =>
      describe(checker, symbol.name, symbol, ''),
    )
    reports.set(
      reportFileName(subpath),
      `# \`${subpath}\`\n\nThe public API of \`${subpath}\` (\`${file}\`), written by \`npm run api:report\`.\nDo not edit: change the code, run the command, and review the difference.\n\n\`\`\`ts\n${lines.join('\n')}\n\`\`\`\n`,
    )
  }
  return reports
}

/** The report files that differ from the code (missing, changed or stale). */
export function staleReports(reports: Map<string, string>): string[] {
  const stale: string[] = []
  for (const [name, text] of reports) {
    const path = join(reportFolder, name)
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) stale.push(name)
  }
  if (existsSync(reportFolder))
    for (const name of readdirSync(reportFolder)) if (!reports.has(name)) stale.push(name)
  return stale.sort()
}

function main(): void {
  const program = apiProgram()
  const reports = apiReports(program)
  const holes = publicHoles(program)
  for (const hole of holes)
    process.stderr.write(
      `api: ${hole.exported} refers to ${hole.refersTo} (${hole.declaredIn}), which no subpath exports\n`,
    )
  if (holes.length > 0) process.exitCode = 1
  if (process.argv.includes('--check')) {
    const stale = staleReports(reports)
    if (stale.length > 0) {
      process.stderr.write(`api report differs: ${stale.join(', ')} (run npm run api:report)\n`)
      process.exitCode = 1
    }
    return
  }
  mkdirSync(reportFolder, { recursive: true })
  for (const name of readdirSync(reportFolder))
    if (!reports.has(name)) rmSync(join(reportFolder, name))
  for (const [name, text] of reports) writeFileSync(join(reportFolder, name), text)
  process.stdout.write(`api report: ${reports.size} subpaths written to api/\n`)
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) main()
