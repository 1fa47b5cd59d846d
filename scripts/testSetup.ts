/** Vitest's global set-up: bundles the CLI once for the run's subprocesses (scripts/cliUnderTest.ts). */
import { buildCliBundle } from './cliUnderTest.js'

export default async function setup(): Promise<() => Promise<void>> {
  return buildCliBundle()
}
