// The packed package, used as a user would: `npm pack` (whose `prepack` script builds dist/, as it
// does from a fresh clone or a git URL), then install the tarball into a temporary project,
// offline, from the npm cache that `npm ci` filled, and run what users run.
//
//   0. the tarball passes `publint --strict` and `attw --profile node16`;
//   1. dist/ bundles no third-party package (every dependency and peer stays an import);
//   2. with the production dependencies only: `tollgate --help` and every sub-command's `--help`;
//      `tollgate gateway` without its optional peers says in one line what to install (exit 2);
//   3. with the optional peers a user adds: `tollgate gateway` starts on the embedded defaults,
//      `/healthz` answers and the console's script is served; `tollgate pay` pays one of its routes
//      against the gateway's local ledger;
//   4. every subpath export loads with `import` and with `require` (and a SQLite file the store
//      opens hands its checkpoints to the worker thread from both);
//   5. a TypeScript file that uses each adapter and store type-checks with `skipLibCheck: false`.
//
// The temporary project gets a lock file cut from this repository's own (the packages the tarball
// and the peers need, at the versions CI tests), so `npm ci --offline` needs no registry metadata.
// better-sqlite3's install script compiles SQLite (minutes on a small machine): install scripts are
// skipped and the addon the repository's `npm ci` built for this Node is copied in (same version).
//
// Run: `node scripts/check-package.mjs` (= `npm run check:package`, the last step of `npm test`); no
// build is needed first.
// `KEEP_SMOKE=1` keeps the temporary project for a look.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
const started = Date.now()
const failures = []

function step(message) {
  console.log(`check:package ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s ${message}`)
}

function fail(message) {
  failures.push(message)
  console.error(`  FAIL ${message}`)
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: 120_000,
    ...options,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
  })
  return {
    code: result.status ?? -1,
    stdout: result.stdout ?? '',
    stderr: (result.stderr ?? '') + (result.error ? String(result.error) : ''),
  }
}

function runAsync(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      ...options,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const limit = options.timeoutMs ?? 120_000
    const timer = setTimeout(() => {
      stderr += `killed after ${limit / 1000} s without finishing`
      child.kill('SIGKILL')
    }, limit)
    child.on('error', (error) => {
      stderr += String(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code: code ?? -1, stdout, stderr })
    })
  })
}

/**
 * Resolves to `value` after `ms`: a deadline raced against a step. Its timer does not keep the
 * script alive once the step won (a 90 s deadline left running held every run open that long).
 */
function later(ms, value) {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms).unref())
}

function firstLines(text, n = 6) {
  return text.trim().split('\n').slice(0, n).join('\n      ')
}

// 0. Pack as `npm pack` does from a fresh clone: its `prepack` script builds dist/ first, so the
// tarball is never packed from a missing or stale build. The scripts' own output precedes the
// JSON on stdout; the JSON array starts on a line of its own.
const work = mkdtempSync(join(tmpdir(), 'tollgate-smoke-'))
const project = join(work, 'app')
mkdirSync(project)
step(`npm pack (prepack builds dist/) into ${work}`)
const packOutput = execFileSync('npm', ['pack', '--json', '--pack-destination', project], {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 64 * 1024 * 1024,
})
const packed = JSON.parse(packOutput.slice(packOutput.search(/^\[$/m)))[0]
const tarballPath = join(project, packed.filename)

// 1. Nothing third-party inside dist/: esbuild names each bundled file in the source maps.
step('dist/ bundles no third-party package')
const dist = join(root, 'dist')
if (!existsSync(join(dist, 'cli.js'))) {
  console.error('check:package: npm pack produced no dist/cli.js (is the prepack script missing?)')
  process.exit(1)
}
const bundled = new Set()
for (const file of readdirSync(dist, { recursive: true })) {
  if (!String(file).endsWith('.map')) continue
  const map = JSON.parse(readFileSync(join(dist, String(file)), 'utf8'))
  for (const source of map.sources ?? []) {
    const at = source.lastIndexOf('node_modules/')
    if (at < 0) continue
    const rest = source.slice(at + 'node_modules/'.length).split('/')
    bundled.add(`${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]} (in ${file})`)
  }
}
for (const name of bundled) fail(`dist/ bundles ${name}`)

// Every package dist/ imports is one the manifest lets a user install: a dependency, a peer, the
// package itself or a Node built-in (a devDependency imported by mistake fails here).
step('dist/ imports only dependencies, peers, itself and Node built-ins')
const declared = new Set([
  pkg.name,
  ...Object.keys(pkg.dependencies ?? {}),
  ...Object.keys(pkg.peerDependencies ?? {}),
])
const { builtinModules } = await import('node:module')
const undeclared = new Set()
for (const file of readdirSync(dist, { recursive: true })) {
  if (!/\.(c?js|d\.c?ts)$/.test(String(file))) continue
  const text = readFileSync(join(dist, String(file)), 'utf8')
  const specifiers = text.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^import\s+)["']([^"'.\s,()][^"'\s,()]*)["']/gm,
  )
  for (const [, specifier] of specifiers) {
    if (specifier.startsWith('node:') || builtinModules.includes(specifier)) continue
    const parts = specifier.split('/')
    const name = specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
    if (!declared.has(name)) undeclared.add(`${name} (in ${file})`)
  }
}
for (const name of undeclared) fail(`dist/ imports ${name}, which package.json does not declare`)

// The lock file of a temporary project: `roots` and everything they need, from this repo's lock.
function lockFor(roots, tarball) {
  const packages = lock.packages
  const kept = new Map()
  const resolveFrom = (from, name) => {
    let base = from
    for (;;) {
      const path = `${base === '' ? '' : `${base}/`}node_modules/${name}`
      if (packages[path]) return path
      if (base === '') return undefined
      const at = base.lastIndexOf('/node_modules/')
      base = at < 0 ? '' : base.slice(0, at)
    }
  }
  const visit = (path, meta) => {
    if (kept.has(path)) return
    kept.set(path, meta)
    const optionalPeers = meta.peerDependenciesMeta ?? {}
    const wanted = [
      ...Object.keys(meta.dependencies ?? {}).map((name) => [name, false]),
      ...Object.keys(meta.optionalDependencies ?? {}).map((name) => [name, true]),
      ...Object.keys(meta.peerDependencies ?? {})
        .filter((name) => !optionalPeers[name]?.optional)
        .map((name) => [name, false]),
    ]
    for (const [name, optional] of wanted) {
      const found = resolveFrom(path, name)
      if (found === undefined) {
        if (!optional) throw new Error(`the lock file has no ${name} for ${path}`)
        continue
      }
      const { dev, devOptional, peer, ...rest } = packages[found]
      visit(found, rest)
    }
  }
  const self = {
    version: pkg.version,
    resolved: `file:${tarball.name}`,
    integrity: tarball.integrity,
    license: pkg.license,
    dependencies: pkg.dependencies,
    bin: pkg.bin,
    engines: pkg.engines,
    peerDependencies: pkg.peerDependencies,
    peerDependenciesMeta: pkg.peerDependenciesMeta,
  }
  const dependencies = { tollgate: `file:${tarball.name}` }
  visit('node_modules/tollgate', self)
  for (const name of roots) {
    const path = `node_modules/${name}`
    if (!packages[path]) throw new Error(`the lock file has no ${name}`)
    dependencies[name] = packages[path].version
    const { dev, devOptional, peer, ...rest } = packages[path]
    visit(path, rest)
  }
  const manifest = { name: 'tollgate-smoke', version: '1.0.0', private: true, dependencies }
  return {
    manifest,
    lock: {
      name: manifest.name,
      version: manifest.version,
      lockfileVersion: 3,
      requires: true,
      packages: { '': { ...manifest, private: undefined }, ...Object.fromEntries(kept) },
    },
  }
}

function install(project, roots, tarball) {
  const { manifest, lock: projectLock } = lockFor(roots, tarball)
  writeFileSync(join(project, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  writeFileSync(join(project, 'package-lock.json'), `${JSON.stringify(projectLock, null, 2)}\n`)
  const result = run(
    'npm',
    [
      // The second install adds to the first (the lock file says exactly what).
      existsSync(join(project, 'node_modules')) ? 'install' : 'ci',
      '--offline',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
    ],
    { cwd: project, timeout: 300_000 },
  )
  if (result.code !== 0) {
    console.error(result.stdout, result.stderr)
    throw new Error(`npm ci --offline failed in ${project}`)
  }
  const addon = 'build/Release/better_sqlite3.node'
  if (roots.includes('better-sqlite3')) {
    mkdirSync(join(project, 'node_modules/better-sqlite3/build/Release'), { recursive: true })
    copyFileSync(
      join(root, 'node_modules/better-sqlite3', addon),
      join(project, 'node_modules/better-sqlite3', addon),
    )
  }
}

// 2. The tarball passes publint and "are the types wrong?", then installs with the production
// dependencies only.
let gateway
try {
  step('publint --strict and attw (node16 profile) on the tarball (npm run check:tarball)')
  const checked = run('npm', ['run', '-s', 'check:tarball'], {
    cwd: root,
    env: { TARBALL: tarballPath },
  })
  if (checked.code !== 0) fail(`publint or attw failed:\n${checked.stdout}${checked.stderr}`)
  // What ships: the build and the README, never tests, fixtures, benchmarks or sources.
  const shipped = packed.files.map((file) => file.path)
  const stray = shipped.filter(
    (path) =>
      !(
        path === 'package.json' ||
        path === 'README.md' ||
        path === 'LICENSE' ||
        path === 'CHANGELOG.md' ||
        path.startsWith('dist/')
      ) || /(?:\.test|\.bench|fixture|testHelpers)/i.test(path),
  )
  if (stray.length > 0) fail(`the tarball ships what it should not: ${stray.join(', ')}`)
  console.log(`      ${shipped.length} files, ${(packed.size / 1024).toFixed(0)} KiB packed`)
  const tarball = {
    name: packed.filename,
    integrity: `sha512-${createHash('sha512')
      .update(readFileSync(join(project, packed.filename)))
      .digest('base64')}`,
  }

  step('install the tarball, production dependencies only (offline)')
  install(project, [], tarball)
  const bin = join(project, 'node_modules/.bin/tollgate')
  const home = join(work, 'home')
  const env = { TOLLGATE_HOME: home, NO_COLOR: '1' }
  const tollgate = (...args) => run(bin, args, { cwd: project, env })

  step('tollgate --help and every sub-command --help')
  const commandsOf = (help) => {
    const at = help.indexOf('\nCommands:\n')
    if (at < 0) return []
    return help
      .slice(at + '\nCommands:\n'.length)
      .split('\n')
      .map((line) => /^ {2}([a-z][\w-]*)/.exec(line)?.[1])
      .filter((name) => name !== undefined && name !== 'help')
  }
  const helped = []
  // One level at a time, each level's commands in parallel (each loads its own modules).
  let level = [[]]
  while (level.length > 0) {
    const results = await Promise.all(
      level.map((path) => runAsync(bin, [...path, '--help'], { cwd: project, env })),
    )
    const next = []
    results.forEach((result, i) => {
      const path = level[i]
      if (result.code !== 0 || !result.stdout.includes('Usage:')) {
        fail(`tollgate ${[...path, '--help'].join(' ')} exited ${result.code}:
      ${firstLines(result.stderr || result.stdout)}`)
        return
      }
      helped.push(path.join(' ') || '(top)')
      for (const name of commandsOf(result.stdout)) next.push([...path, name])
    })
    level = next
  }
  const top = commandsOf(tollgate('--help').stdout)
  for (const name of ['gateway', 'pay', 'wallet', 'ledger', 'conformance', 'refunds']) {
    if (!top.includes(name)) fail(`tollgate --help does not list ${name}`)
  }
  console.log(`      --help answered for: ${helped.join(', ')}`)

  step(
    'tollgate wallet new; tollgate gateway and keys without their peers: one line naming npm install, exit 2',
  )
  const [created, bare, keysBare] = await Promise.all([
    runAsync(bin, ['wallet', 'new', '--json'], { cwd: project, env }),
    runAsync(bin, ['gateway', '--port', '0'], { cwd: project, env }),
    // On the embedded default (SQLite), whatever database the calling shell points at.
    runAsync(bin, ['keys', 'list'], {
      cwd: project,
      env: { ...env, DATABASE_URL: undefined, DATABASE_SCHEMA: undefined },
    }),
  ])
  if (created.code !== 0) fail(`tollgate wallet new exited ${created.code}: ${created.stderr}`)
  const lines = bare.stderr.trim().split('\n')
  if (bare.code !== 2 || lines.length !== 1 || !/npm install [a-z@]/.test(lines[0] ?? '')) {
    fail(`tollgate gateway without hono: exit ${bare.code}, stderr:
      ${firstLines(bare.stderr || bare.stdout)}`)
  }
  const keysLines = keysBare.stderr.trim().split('\n')
  if (
    keysBare.code !== 2 ||
    keysLines.length !== 1 ||
    !/npm install better-sqlite3$/.test(keysLines[0] ?? '')
  ) {
    fail(`tollgate keys list without better-sqlite3: exit ${keysBare.code}, stderr:
      ${firstLines(keysBare.stderr || keysBare.stdout)}`)
  }

  // 3. The optional peers a user adds, then the gateway and a paid call.
  const peers = [
    'hono',
    '@hono/node-server',
    'pino',
    'prom-client',
    'better-sqlite3',
    'express',
    'koa',
    'ioredis',
    'pg',
    '@modelcontextprotocol/sdk',
    '@types/node',
    '@types/express',
    '@types/koa',
    '@types/pg',
  ]
  step(`add the optional peers: ${peers.join(' ')}`)
  install(project, peers, tarball)

  // 5. The types, with skipLibCheck off: tsc runs while the gateway is tried.
  writeFileSync(
    join(project, 'uses.ts'),
    `import { createMemoryStore, type PaymentStore } from 'tollgate'
import { createPayingFetch } from 'tollgate/client'
import { paywall as expressPaywall } from 'tollgate/express'
import { paywall as honoPaywall } from 'tollgate/hono'
import { paywall as koaPaywall } from 'tollgate/koa'
import { createPostgresStore } from 'tollgate/stores/postgres'
import { createRedisStore } from 'tollgate/stores/redis'
import { createSqliteStore } from 'tollgate/stores/sqlite'
import { startLedger } from 'tollgate/testing'
import { runConformance } from 'tollgate/conformance'
import { createNodeFetch, readNodeBody } from 'tollgate/node'
import { createGatewayMcp, createPaidMcpTools } from 'tollgate/mcp'

const options = {
  routes: { 'GET /paid': { price: '0.01' } },
  payTo: '0x${'1'.repeat(64)}',
  ledger: 'http://127.0.0.1:9123',
  store: createMemoryStore(),
  secrets: ['a secret of at least thirty-two characters'],
}
export const stores: PaymentStore[] = [
  createMemoryStore(),
  createSqliteStore({ database: ':memory:' }),
  createPostgresStore({ connection: 'postgres://localhost/x' }),
  createRedisStore({ connection: 'redis://localhost:6379' }),
]
export const middlewares = [
  expressPaywall(options),
  koaPaywall(options),
  honoPaywall(options),
]
export const used = [createPayingFetch, startLedger, runConformance, createNodeFetch, readNodeBody]
export const paidTools = createPaidMcpTools(options)
export const mcp = [createGatewayMcp]
`,
  )
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        types: ['node'],
      },
      files: ['uses.ts'],
    }),
  )
  const tsc = runAsync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'],
    // A whole-program check of every declaration: minutes on a busy two-core machine.
    { cwd: project, timeoutMs: 300_000 },
  )

  step('tollgate gateway on the embedded defaults, /healthz')
  gateway = spawn(bin, ['gateway'], {
    cwd: project,
    env: { ...process.env, ...env, PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  gateway.stdout.on('data', (chunk) => {
    out += chunk
  })
  gateway.stderr.on('data', (chunk) => {
    err += chunk
  })
  const exited = new Promise((resolve) => gateway.once('exit', (code) => resolve(code)))
  const ready = await Promise.race([
    (async () => {
      while (!/listening on (http:\S+)/.test(out)) {
        if (gateway.exitCode !== null) return false
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return true
    })(),
    exited.then(() => false),
    later(90_000, false),
  ])
  if (!ready) {
    fail(`tollgate gateway did not start:
      ${firstLines(err || out, 10)}`)
  } else {
    const url = /listening on (http:\S+)/.exec(out)[1]
    const ledgerUrl = /ledger\s+(http:\S+)/.exec(out)?.[1]
    const health = await fetch(`${url}/healthz`)
    if (health.status !== 200) fail(`GET /healthz answered ${health.status}`)
    // The console's browser files ship in dist/console/ and the packaged gateway finds them.
    const script = await fetch(`${url}/console/assets/console.js`)
    if (script.status !== 200) {
      fail(`GET /console/assets/console.js answered ${script.status}: ${await script.text()}`)
    }

    step(
      'tollgate wallet fund + tollgate pay one route against the gateway ledger, tollgate session list',
    )
    if (ledgerUrl === undefined) fail(`the gateway printed no ledger URL:\n${out}`)
    else {
      const funded = tollgate('wallet', 'fund', '--ledger', ledgerUrl, '--usdc', '1')
      if (funded.code !== 0) fail(`tollgate wallet fund exited ${funded.code}: ${funded.stderr}`)
      const body = JSON.stringify({ messages: [{ role: 'user', content: 'Say hello' }] })
      const paid = tollgate(
        'pay',
        'POST',
        `${url}/openai/v1/chat/completions`,
        '-d',
        body,
        '--ledger',
        ledgerUrl,
        '--max',
        '1',
        '--json',
      )
      let result
      try {
        result = JSON.parse(paid.stdout)
      } catch {
        result = undefined
      }
      if (paid.code !== 0 || result?.payment?.digest === undefined) {
        fail(`tollgate pay exited ${paid.code}:
      ${firstLines(paid.stdout || paid.stderr, 10)}`)
      }
      // The session commands load from the built CLI (the wallet has no channel yet).
      const sessions = tollgate('session', 'list', '--json')
      if (sessions.code !== 0 || sessions.stdout.trim() !== '[]') {
        fail(`tollgate session list exited ${sessions.code}:
      ${firstLines(sessions.stdout || sessions.stderr, 10)}`)
      }
    }
    gateway.kill('SIGTERM')
    await Promise.race([exited, later(15_000)])
  }

  // 4. Every subpath export, under ESM and CJS.
  step('every subpath export: import and require')
  const subpaths = Object.keys(pkg.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? 'tollgate' : `tollgate/${key.slice(2)}`))
  const esm = subpaths
    .map(
      (name) =>
        `try { const m = await import('${name}'); if (Object.keys(m).length === 0) throw new Error('no exports') } catch (e) { failed.push('${name}: ' + e.message.split('\\n')[0]) }`,
    )
    .join('\n')
  writeFileSync(
    join(project, 'esm.mjs'),
    `const failed = []\n${esm}\nif (failed.length) { console.error(failed.join('\\n')); process.exit(1) }\n`,
  )
  const cjs = subpaths
    .map(
      (name) =>
        `try { const m = require('${name}'); if (Object.keys(m).length === 0) throw new Error('no exports') } catch (e) { failed.push('${name}: ' + e.message.split('\\n')[0]) }`,
    )
    .join('\n')
  writeFileSync(
    join(project, 'cjs.cjs'),
    `const failed = []\n${cjs}\nif (failed.length) { console.error(failed.join('\\n')); process.exit(1) }\n`,
  )
  for (const file of ['esm.mjs', 'cjs.cjs']) {
    const loaded = run(process.execPath, [file], { cwd: project })
    if (loaded.code !== 0) fail(`${file}: ${firstLines(loaded.stderr, 20)}`)
  }

  step('a SQLite file opened by the store checkpoints in its worker: import and require')
  const checkpoints = (load) =>
    `${load}\nconst db = openSqliteDatabase(process.argv[2])\nconst pages = db.pragma('wal_autocheckpoint', { simple: true })\ndb.close()\nif (pages !== 0) { console.error('automatic checkpoint left at ' + pages + ' pages: the worker did not start'); process.exit(1) }\n`
  writeFileSync(
    join(project, 'checkpoints.mjs'),
    checkpoints("import { openSqliteDatabase } from 'tollgate/stores/sqlite'"),
  )
  writeFileSync(
    join(project, 'checkpoints.cjs'),
    checkpoints("const { openSqliteDatabase } = require('tollgate/stores/sqlite')"),
  )
  for (const file of ['checkpoints.mjs', 'checkpoints.cjs']) {
    const opened = run(process.execPath, [file, join(project, `${file}.db`)], { cwd: project })
    if (opened.code !== 0) fail(`${file}: ${firstLines(opened.stderr, 20)}`)
  }

  step('type-check a file using each adapter and store, skipLibCheck: false (in the background)')
  const tscResult = await tsc
  // Errors in our declarations or in the user's file fail; another package's declarations are its
  // own (e.g. @types/koa against content-disposition 1's own types), printed as notes.
  const errors = tscResult.stdout.split('\n').filter((line) => /error TS\d+/.test(line))
  const ours = errors.filter((line) => /^(uses\.ts|node_modules\/tollgate\/)/.test(line))
  for (const line of errors.filter((line) => !ours.includes(line))) {
    console.log(`      note, not ours: ${line}`)
  }
  if (ours.length > 0 || (tscResult.code !== 0 && errors.length === 0)) {
    fail(
      `tsc (skipLibCheck: false):\n      ${(ours.length > 0 ? ours.join('\n') : tscResult.stdout + tscResult.stderr).replaceAll('\n', '\n      ')}`,
    )
  }
} catch (error) {
  fail(error instanceof Error ? error.message : String(error))
} finally {
  if (gateway && gateway.exitCode === null) gateway.kill('SIGKILL')
  if (process.env.KEEP_SMOKE) console.log(`check:package: kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}

const seconds = ((Date.now() - started) / 1000).toFixed(1)
if (failures.length > 0) {
  console.error(`check:package: ${failures.length} failed (${seconds}s)`)
  process.exit(1)
}
console.log(`check:package: the packed tarball works (${seconds}s)`)
