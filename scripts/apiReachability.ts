/**
 * The public API names every type it uses: a public function, type or constant whose declaration
 * refers to a type of the project's own that no public subpath exports (not even as a namespace
 * member) is a hole — a user can receive that value but cannot name its type. The API report
 * (`scripts/apiReport.ts`) fails on each one.
 */
import { isAbsolute, relative } from 'node:path'
import ts from 'typescript'

/** One public name that refers to a type of the project's own that no subpath exports. */
export type UnexportedReference = {
  /** The public name, with its namespace (`Settle.checkEffects`). */
  exported: string
  /** The type it refers to (`EffectsVerdict`). */
  refersTo: string
  /** Where that type is declared, relative to the root. */
  declaredIn: string
}

function resolve(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
}

function isNamespace(symbol: ts.Symbol): boolean {
  const first = symbol.declarations?.[0]
  return first !== undefined && (ts.isSourceFile(first) || ts.isModuleDeclaration(first))
}

/**
 * Every public name of `entries` (the subpaths' source files) that refers to a type declared in
 * a file under `root` (not in node_modules) which none of `entries` exports.
 */
export function unexportedReferences(
  program: ts.Program,
  entries: readonly string[],
  root: string,
): UnexportedReference[] {
  const checker = program.getTypeChecker()
  const exported = new Set<ts.Symbol>()
  const named: [name: string, symbol: ts.Symbol][] = []
  const visit = (prefix: string, module: ts.Symbol) => {
    for (const member of checker.getExportsOfModule(module)) {
      const symbol = resolve(checker, member)
      const name = `${prefix}${member.name}`
      if (exported.has(symbol) && isNamespace(symbol)) continue
      exported.add(symbol)
      if (isNamespace(symbol)) visit(`${name}.`, symbol)
      else named.push([name, symbol])
    }
  }
  for (const entry of entries) {
    const source = program.getSourceFile(entry)
    const module = source && checker.getSymbolAtLocation(source)
    if (module) visit('', module)
  }

  const ours = (declaration: ts.Declaration) => {
    const file = declaration.getSourceFile().fileName
    const path = relative(root, file)
    return !path.startsWith('..') && !isAbsolute(path) && !path.includes('node_modules')
  }
  const found = new Map<string, UnexportedReference>()
  const check = (name: string, target: ts.Symbol | undefined) => {
    if (target === undefined) return
    const symbol = resolve(checker, target)
    if (symbol.flags & ts.SymbolFlags.TypeParameter) return
    const kinds =
      ts.SymbolFlags.TypeAlias |
      ts.SymbolFlags.Interface |
      ts.SymbolFlags.Class |
      ts.SymbolFlags.Enum
    if (!(symbol.flags & kinds)) return
    const declaration = symbol.declarations?.[0]
    if (declaration === undefined || !ours(declaration) || exported.has(symbol)) return
    const key = `${name} ${symbol.name}`
    if (!found.has(key))
      found.set(key, {
        exported: name,
        refersTo: symbol.name,
        declaredIn: relative(root, declaration.getSourceFile().fileName),
      })
  }
  const walk = (name: string, node: ts.Node) => {
    if (ts.isTypeReferenceNode(node)) check(name, checker.getSymbolAtLocation(node.typeName))
    else if (ts.isExpressionWithTypeArguments(node))
      check(name, checker.getSymbolAtLocation(node.expression))
    // Bodies are not the API; only what a signature or a type declaration says is.
    if (ts.isBlock(node)) return
    ts.forEachChild(node, (child) => walk(name, child))
  }
  /** The alias or the named type of an inferred type (a function without an annotated return). */
  const checkType = (name: string, type: ts.Type, depth = 0) => {
    check(name, type.aliasSymbol)
    if (type.aliasSymbol === undefined) check(name, type.getSymbol())
    if (depth > 0) return
    for (const signature of type.getCallSignatures()) {
      checkType(name, checker.getReturnTypeOfSignature(signature), depth + 1)
      for (const parameter of signature.getParameters())
        checkType(name, checker.getTypeOfSymbol(parameter), depth + 1)
    }
  }

  for (const [name, symbol] of named) {
    for (const declaration of symbol.declarations ?? []) {
      if (!ours(declaration)) continue
      if (ts.isVariableDeclaration(declaration)) {
        if (declaration.type) walk(name, declaration.type)
        else checkType(name, checker.getTypeOfSymbolAtLocation(symbol, declaration))
        continue
      }
      walk(name, declaration)
      if (ts.isFunctionDeclaration(declaration) && declaration.type === undefined) {
        const signature = checker.getSignatureFromDeclaration(declaration)
        if (signature) checkType(name, checker.getReturnTypeOfSignature(signature))
      }
    }
  }
  return [...found.values()].sort((a, b) =>
    a.exported === b.exported
      ? a.refersTo.localeCompare(b.refersTo)
      : a.exported.localeCompare(b.exported),
  )
}
