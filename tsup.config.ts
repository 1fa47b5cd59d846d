import { readFileSync } from 'node:fs'
import { defineConfig } from 'tsup'
import { subpaths } from './scripts/subpaths.js'

/**
 * Every public subpath, from the one table in tsconfig.json `paths` (scripts/subpaths.ts): add one
 * there and in package.json `exports` when it has code. `tollgate` is `index`, `tollgate/x` is `x`.
 */
export const entries = Object.fromEntries(
  Object.entries(subpaths).map(([name, file]) => [
    name === 'tollgate' ? 'index' : name.slice('tollgate/'.length),
    file,
  ]),
)

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
  devDependencies: Record<string, string>
}

/**
 * Never bundled: every package the manifest names (dependencies, optional peers, and the
 * devDependencies too, so that one imported by mistake fails the package smoke test instead of
 * being copied in), and the package itself: a subpath importing another (`tollgate/express` imports
 * `tollgate` and `tollgate/node`) imports the built one, so both share one copy of the core.
 */
const external = [
  /^tollgate(\/|$)/,
  ...Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.devDependencies }),
]

export default defineConfig([
  {
    entry: entries,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node22',
    splitting: true,
    treeshake: true,
    external,
  },
  {
    // The bin. Each sub-command is imported when it runs (src/cli.ts): with splitting, each is a
    // chunk of its own, so the gateway's packages load only for `tollgate gateway`.
    entry: { cli: 'src/cli.ts' },
    format: ['esm'],
    target: 'node22',
    sourcemap: true,
    splitting: true,
    external,
    banner: { js: '#!/usr/bin/env node' },
  },
])
