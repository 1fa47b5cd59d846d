// Builds and unit-tests each Move package under move/ (every move/<name>/Move.toml) with the Sui
// CLI: `sui move build`, then `sui move test`, stopping at the first failure with its exit code.
// Without `sui` on PATH it prints "skipped: no sui CLI" and exits 0, so a machine without the CLI
// (this project's CI) says so instead of passing in silence. Run: `npm run move`.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../move/', import.meta.url))
const names = process.platform === 'win32' ? ['sui.exe', 'sui.cmd'] : ['sui']
const hasSui = (process.env.PATH ?? '')
  .split(delimiter)
  .some((dir) => dir !== '' && names.some((name) => existsSync(join(dir, name))))

const packages = readdirSync(root, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, entry.name, 'Move.toml')))
  .map((entry) => entry.name)
  .sort()

if (!hasSui) {
  console.log(
    `skipped: no sui CLI (not built or tested: ${packages.map((p) => `move/${p}`).join(', ')})`,
  )
  process.exit(0)
}

for (const name of packages) {
  for (const command of ['build', 'test']) {
    console.log(`$ sui move ${command}  (move/${name})`)
    const run = spawnSync('sui', ['move', command], { cwd: join(root, name), stdio: 'inherit' })
    if (run.status !== 0) {
      console.log(`failed: sui move ${command} in move/${name}`)
      process.exit(run.status ?? 1)
    }
  }
}
console.log(`ok: sui move build and test passed for ${packages.map((p) => `move/${p}`).join(', ')}`)
