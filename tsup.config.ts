import { defineConfig } from 'tsup'

/** Every public subpath: add one here and in package.json `exports` when it has code. */
export const entries = {
  index: 'src/index.ts',
  testing: 'src/testing/index.ts',
  client: 'src/client/index.ts',
  'stores/sqlite': 'src/stores/sqlite.ts',
  'stores/redis': 'src/stores/redis.ts',
  'stores/postgres': 'src/stores/postgres.ts',
  express: 'adapters/express.ts',
  koa: 'adapters/koa.ts',
  hono: 'adapters/hono.ts',
  conformance: 'conformance/index.ts',
}

export default defineConfig([
  {
    entry: entries,
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    splitting: true,
    treeshake: true,
  },
  {
    entry: { cli: 'src/cli.ts' },
    format: ['esm'],
    target: 'node20',
    sourcemap: true,
    banner: { js: '#!/usr/bin/env node' },
  },
])
