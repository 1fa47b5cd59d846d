/**
 * Builds the owner's console's browser files with esbuild: `reference-gateway/console/client/main.ts`
 * (the Wallet Standard, the Sui transaction builder and the x402 encoder it imports) into one
 * minified `console.js`, and `console.css`, in `dist/console/` — where the gateway serves them from,
 * run from source (the demo, the tests) or from the package. `npm run build` runs it after tsup;
 * `npm run demo` and the console's tests run it too. Prints the sizes, raw and compressed (gzip and
 * brotli), and fails when JS and CSS together exceed 100 KiB compressed.
 *
 * Usage: `node scripts/build-console.mjs [--out <folder>] [--quiet]`.
 */
import { mkdirSync, readFileSync, renameSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { build } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const outIndex = args.indexOf('--out')
const out = outIndex >= 0 ? args[outIndex + 1] : join(root, 'dist', 'console')
const quiet = args.includes('--quiet')
const budget = 100 * 1024

mkdirSync(out, { recursive: true })
const client = join(root, 'reference-gateway', 'console', 'client')
await build({
  entryPoints: { console: join(client, 'main.ts'), 'console-style': join(client, 'console.css') },
  outdir: out,
  entryNames: '[name]',
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox115', 'safari16'],
  tsconfig: join(root, 'tsconfig.json'),
  legalComments: 'none',
  logLevel: 'warning',
})
// The CSS entry has a name of its own (two entries may not share one): served as console.css.
renameSync(join(out, 'console-style.css'), join(out, 'console.css'))

const sizes = ['console.js', 'console.css'].map((name) => {
  const bytes = readFileSync(join(out, name))
  return {
    name,
    raw: bytes.length,
    gzip: gzipSync(bytes, { level: 9 }).length,
    brotli: brotliCompressSync(bytes, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
    }).length,
  }
})
const total = (key) => sizes.reduce((sum, s) => sum + s[key], 0)
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`
if (!quiet) {
  for (const s of sizes) {
    process.stdout.write(
      `${s.name.padEnd(12)} ${kib(s.raw).padStart(10)} raw, ${kib(s.gzip).padStart(9)} gzip, ${kib(s.brotli).padStart(9)} brotli\n`,
    )
  }
  process.stdout.write(
    `${'total'.padEnd(12)} ${kib(total('raw')).padStart(10)} raw, ${kib(total('gzip')).padStart(9)} gzip, ${kib(total('brotli')).padStart(9)} brotli  (${out})\n`,
  )
}
if (total('gzip') > budget) {
  process.stderr.write(
    `The console's JS and CSS are ${kib(total('gzip'))} gzip, over the ${kib(budget)} budget.\n`,
  )
  process.exit(1)
}
