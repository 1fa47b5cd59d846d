/**
 * The console's built browser files (`console.js`, `console.css`): bundled by
 * `scripts/build-console.mjs` (esbuild) from `console/client/`, which the package build, the demo
 * and the tests run. The gateway reads them once at start; when they are missing it serves the page
 * with one line saying how to build them, and answers the files 404 with that line.
 *
 * @module
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The one line that says how to build the console's files. */
export const buildHint =
  'The console’s browser files are not built: run `npm run build:console` (part of `npm run build`).'

/** The built files, or why there are none. */
export type ConsoleAssets =
  | { status: 'built'; js: string; css: string; folder: string }
  | { status: 'missing'; hint: string }

/**
 * Where the built files may be: `dist/console/` beside the packaged gateway's code (the package), or
 * the repository's `dist/console/` when the gateway runs from source (the demo, the tests).
 */
function candidateFolders(): string[] {
  return [new URL('./console/', import.meta.url), new URL('../../dist/console/', import.meta.url)]
    .filter((url) => url.protocol === 'file:')
    .map((url) => fileURLToPath(url))
}

/**
 * Loads the built files from `folder`, or from the first candidate folder that has them.
 *
 * @param folder - where `console.js` and `console.css` are. Default: next to the gateway's code.
 * @example
 * ```ts
 * const assets = loadConsoleAssets()
 * if (assets.status === 'missing') logger.warn({ event: 'console_not_built', message: assets.hint })
 * ```
 */
export function loadConsoleAssets(folder?: string): ConsoleAssets {
  const folders = folder === undefined ? candidateFolders() : [folder]
  for (const candidate of folders) {
    const js = `${candidate.replace(/\/?$/, '/')}console.js`
    const css = `${candidate.replace(/\/?$/, '/')}console.css`
    if (existsSync(js) && existsSync(css)) {
      return {
        status: 'built',
        js: readFileSync(js, 'utf8'),
        css: readFileSync(css, 'utf8'),
        folder: candidate,
      }
    }
  }
  return { status: 'missing', hint: buildHint }
}
