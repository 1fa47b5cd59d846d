import { defineConfig } from 'vitest/config'

const roots = ['src', 'adapters', 'reference-gateway', 'conformance', 'bench']

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: roots.map((r) => `${r}/**/*.test.ts`),
          exclude: ['**/*.int.test.ts', '**/node_modules/**', '**/dist/**'],
        },
      },
      {
        test: {
          name: 'integration',
          include: roots.map((r) => `${r}/**/*.int.test.ts`),
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
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
