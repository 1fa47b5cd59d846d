/**
 * The boundary rule (biome.json, `noRestrictedImports`): code outside `src/` and the CLI import the
 * package's public exports, never its source files. Lints deliberate fixtures with the repository's
 * own configuration in a scratch folder laid out like the repository.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { repositoryRoot } from './subpaths.js'

const fixtures: Record<string, string> = {
  // Reaches into the core: each must be flagged.
  'adapters/reach.ts': "import { readNodeBody } from '../src/internal/nodeHttp.js'",
  'reference-gateway/upstreams/reach.ts':
    "import { createEngine } from '../../src/testing/ledger/engine.js'",
  'conformance/reach.ts': "import { usdcCoinTypes } from '../src/internal/terms.js'",
  'examples/reach.ts': "import { createMemoryStore } from '../src/index.js'",
  'src/cli/reach.ts': "import { readNodeBody } from '../internal/nodeHttp.js'",
  // Allowed: public exports, the CLI's own modules and the gateway app, tests.
  'adapters/public.ts': "import { readNodeBody } from 'tollgate/node'",
  'conformance/public.ts': "import { startLedger } from 'tollgate/testing'",
  'src/cli/public.ts': "import { startGateway } from '../../reference-gateway/server.js'",
  'src/cli/sibling.ts': "import { ledgerCommand } from './ledger.js'",
  'adapters/reach.test.ts': "import { readNodeBody } from '../src/internal/nodeHttp.js'",
}

const scratch = mkdtempSync(join(tmpdir(), 'tollgate-boundaries-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function flagged(): string[] {
  copyFileSync(join(repositoryRoot, 'biome.json'), join(scratch, 'biome.json'))
  for (const [file, line] of Object.entries(fixtures)) {
    mkdirSync(dirname(join(scratch, file)), { recursive: true })
    const name = /import \{ (\w+) \}/.exec(line)?.[1]
    writeFileSync(join(scratch, file), `${line}\n\nexport const used = ${name}\n`)
  }
  let out: string
  try {
    out = execFileSync(
      join(repositoryRoot, 'node_modules/.bin/biome'),
      ['lint', '--reporter=json', '--only=style/noRestrictedImports', '.'],
      { cwd: scratch, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    )
  } catch (error) {
    // Biome exits 1 when it reports an error: its report is on stdout all the same.
    out = (error as { stdout: string }).stdout
  }
  const report = JSON.parse(out) as {
    diagnostics: { category: string; location: { path: string } }[]
  }
  return report.diagnostics
    .filter((d) => d.category === 'lint/style/noRestrictedImports')
    .map((d) => d.location.path)
    .sort()
}

describe('the import boundary lint rule', () => {
  it('fails each reach into src/ from outside it and from the CLI, and nothing else', () => {
    expect(flagged()).toEqual([
      'adapters/reach.ts',
      'conformance/reach.ts',
      'examples/reach.ts',
      'reference-gateway/upstreams/reach.ts',
      'src/cli/reach.ts',
    ])
  })
})
