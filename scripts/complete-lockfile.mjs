// Completes package-lock.json with the platform-specific optional packages (esbuild, rollup, biome
// binaries for other operating systems and CPUs) that npm leaves out when the registry it installs
// from does not serve them. `npm ci` insists that every optional dependency is listed; each entry
// added here names its os/cpu/libc, so npm skips it on other platforms and installs it where it
// matches. Run after `npm install` changes the lock file: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from 'node:fs'

const file = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(file, 'utf8'))
const packages = lock.packages
const systems = [
  'aix',
  'android',
  'darwin',
  'freebsd',
  'linux',
  'netbsd',
  'openbsd',
  'openharmony',
  'sunos',
  'win32',
  'wasi',
  'none',
]
const cpus = [
  'arm64',
  'x64',
  'ia32',
  'arm',
  'loong64',
  'mips64el',
  'ppc64',
  'riscv64',
  's390x',
  'wasm32',
]

function platformOf(name) {
  const parts = name.split('/').pop().split('-')
  const os = parts.filter((p) => systems.includes(p))
  const cpu = parts.filter((p) => cpus.includes(p))
  const libc = parts.includes('musl')
    ? ['musl']
    : parts.includes('gnu') || parts.includes('gnueabihf')
      ? ['glibc']
      : undefined
  return { os, cpu, libc }
}

let added = 0
for (const [path, meta] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${name}`
    const hoisted = `node_modules/${name}`
    if (packages[nested] || packages[hoisted]) continue
    const { os, cpu, libc } = platformOf(name)
    if (os.length === 0 && cpu.length === 0) continue // not a platform binary: leave it to npm
    packages[hoisted] = {
      version,
      ...(meta.dev ? { dev: true } : {}),
      optional: true,
      ...(os.length ? { os } : {}),
      ...(cpu.length ? { cpu } : {}),
      ...(libc ? { libc } : {}),
    }
    added++
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`complete-lockfile: added ${added} platform packages`)
