/**
 * Where a server's instructions go, by function, JavaScript included: reads a callgrind dump made
 * with `--dump-instr=yes --compress-pos=no --compress-strings=no` of a Node process started with
 * `--perf-basic-prof`, and names the addresses of V8's generated code (which callgrind knows only
 * as `0x…`) from the map V8 wrote to `/tmp/perf-<pid>.map` (JavaScript functions as
 * `JS:*name file:line`, regular expressions as `RegExp:<source>`).
 *
 * Self instructions only (a function's own, not its callees'). callgrind follows calls by the
 * machine's call and return instructions, which V8's code does not always use as C code does, so a
 * few hundred instructions per request can land on a library's call site instead of the generated
 * code that ran; the totals are exact, the attribution is close.
 */
import { readFileSync } from 'node:fs'

/** One generated-code range of a perf map. */
type Range = { start: number; end: number; name: string }

function readPerfMap(path: string): Range[] {
  const ranges: Range[] = []
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return ranges
  }
  for (const line of text.split('\n')) {
    const first = line.indexOf(' ')
    const second = line.indexOf(' ', first + 1)
    if (first < 0 || second < 0) continue
    const start = Number.parseInt(line.slice(0, first), 16)
    const size = Number.parseInt(line.slice(first + 1, second), 16)
    if (Number.isFinite(start) && Number.isFinite(size)) {
      ranges.push({ start, end: start + size, name: line.slice(second + 1) })
    }
  }
  return ranges.sort((a, b) => a.start - b.start)
}

/** The range holding `address`, by binary search. */
function rangeOf(ranges: Range[], address: number): Range | undefined {
  let low = 0
  let high = ranges.length - 1
  while (low <= high) {
    const middle = (low + high) >> 1
    const range = ranges[middle] as Range
    if (address < range.start) high = middle - 1
    else if (address >= range.end) low = middle + 1
    else return range
  }
  return undefined
}

/**
 * The functions that executed the most instructions of their own in `dumpPath`, per request
 * (`requests` in the dump), most first; `mapPath` is V8's perf map of the same process.
 */
export function topFunctions(
  dumpPath: string,
  mapPath: string,
  requests: number,
  count: number,
): { name: string; perRequest: number }[] {
  const ranges = readPerfMap(mapPath)
  const totals = new Map<string, number>()
  let fn = ''
  let callCost = false
  for (const line of readFileSync(dumpPath, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) {
      fn = line.slice(3)
      continue
    }
    if (line.startsWith('calls=')) {
      // The next cost line is the call's inclusive cost, not the caller's own.
      callCost = true
      continue
    }
    if (!line.startsWith('0x')) continue
    if (callCost) {
      callCost = false
      continue
    }
    const fields = line.split(' ')
    const cost = Number(fields[fields.length - 1])
    let name = fn
    if (fn.startsWith('0x')) {
      const range = rangeOf(ranges, Number.parseInt(fields[0] as string, 16))
      name = range === undefined ? 'generated code (not in the perf map)' : range.name
    }
    totals.set(name, (totals.get(name) ?? 0) + cost)
  }
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, total]) => ({ name, perRequest: total / requests }))
}
