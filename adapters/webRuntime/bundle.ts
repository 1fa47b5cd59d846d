/**
 * Bundles an entry as a Web-standard runtime's bundler would (esbuild, platform `neutral`, the
 * `workerd`/`worker`/`browser` export conditions, as Wrangler resolves them) and reports every
 * import of a Node built-in module that the bundle still has, with the file that imports it.
 *
 * @module
 */
import { builtinModules } from 'node:module'
import { relative } from 'node:path'
import { build, type Plugin } from 'esbuild'

/** A bundle and the Node built-ins it still imports (`node:crypto ← src/internal/x.ts`). */
export type WebBundle = { code: string; nodeImports: string[] }

const builtins = new Set(builtinModules)

/** Bundles `entry` (a path from the repository root) for a Web-standard runtime. */
export async function bundleForWeb(entry: string): Promise<WebBundle> {
  const nodeImports = new Set<string>()
  const recordNode: Plugin = {
    name: 'record-node-builtins',
    setup(on) {
      on.onResolve({ filter: /.*/ }, (args) => {
        const bare = args.path.startsWith('node:') ? args.path.slice(5) : args.path
        if (!args.path.startsWith('node:') && !builtins.has(bare.split('/')[0] ?? '')) return
        nodeImports.add(`node:${bare} ← ${relative(process.cwd(), args.importer)}`)
        return { path: args.path, external: true }
      })
    },
  }
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['browser', 'module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    logLevel: 'silent',
    plugins: [recordNode],
  })
  const code = result.outputFiles[0]?.text ?? ''
  return { code, nodeImports: [...nodeImports].sort() }
}
