import { defineConfig } from 'vitest/config'
import { repositoryRoot, subpaths } from './scripts/subpaths.js'

const roots = ['src', 'adapters', 'reference-gateway', 'conformance', 'bench', 'scripts']

/** `tollgate`, `tollgate/express`, … → their source files (the tsconfig.json `paths` table). */
const alias = Object.entries(subpaths).map(([name, file]) => ({
  find: new RegExp(`^${name}$`),
  replacement: `${repositoryRoot}${file}`,
}))

/**
 * Test files run in parallel processes. Vitest's default is one fewer than the cores — a single
 * worker on a two-core machine, where the integration files (real servers, ledger latency, child
 * processes) spend most of their time waiting, not computing. `VITEST_MAX_WORKERS` overrides.
 */
const maxWorkers = Number(process.env.VITEST_MAX_WORKERS ?? 4)

export default defineConfig({
  resolve: { alias },
  test: {
    maxWorkers,
    // The CLI, bundled once for the tests that run it in a subprocess (scripts/cliUnderTest.ts).
    globalSetup: ['scripts/testSetup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: roots.map((r) => `${r}/**/*.test.ts`),
          exclude: ['**/*.int.test.ts', '**/node_modules/**', '**/dist/**'],
          // Property tests run hundreds of cases; a worker sharing a core may take seconds.
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: roots.map((r) => `${r}/**/*.int.test.ts`),
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'types',
          include: [],
          typecheck: {
            enabled: true,
            only: true,
            include: roots.map((r) => `${r}/**/*.test-d.ts`),
          },
        },
      },
    ],
    benchmark: { include: ['bench/**/*.bench.ts'] },
  },
})
