import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { topFunctions } from './symbols.js'

const folder = mkdtempSync(join(tmpdir(), 'symbols-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

// A callgrind dump as `--dump-instr=yes --compress-pos=no --compress-strings=no` writes it
// (positions: instruction address, line; one event, Ir), and V8's perf map of the same process.
const dump = `# callgrind format
version: 1
positions: instr line
events: Ir
summary: 1750

ob=/usr/bin/node
fl=stream.c
fn=uv__try_write
0x18b7ea0 756 100
0x18b7ea1 756 100
cfn=uv__getiovmax
calls=2 0x18ac660 287
0x18b7ea1 756 5000
0x18b7ea4 756 50

ob=???
fn=0x000000000d164a00
0xd164a00 0 400
0xd164a10 0 200
0xd170004 0 300

fn=0x000000000d180000
0xd180000 0 500
`
const perfMap = `d164a00 40 JS:*processHeader node:_http_outgoing:546:23
d170000 20 RegExp:[^\\t\\x20-\\x7e\\x80-\\xff]
`

describe('topFunctions', () => {
  it('sums each function’s own instructions per request, naming generated code from the perf map', () => {
    writeFileSync(join(folder, 'cg.1'), dump)
    writeFileSync(join(folder, 'perf.map'), perfMap)
    const top = topFunctions(join(folder, 'cg.1'), join(folder, 'perf.map'), 10, 10)
    expect(top).toEqual([
      { name: 'JS:*processHeader node:_http_outgoing:546:23', perRequest: 60 },
      { name: 'generated code (not in the perf map)', perRequest: 50 },
      { name: 'RegExp:[^\\t\\x20-\\x7e\\x80-\\xff]', perRequest: 30 },
      // 250 of its own; the 5 000 after `calls=` are its callee's, not its own.
      { name: 'uv__try_write', perRequest: 25 },
    ])
    expect(topFunctions(join(folder, 'cg.1'), join(folder, 'perf.map'), 10, 2)).toHaveLength(2)
  })

  it('names generated code as unknown when the perf map is missing', () => {
    writeFileSync(join(folder, 'cg.2'), dump)
    const top = topFunctions(join(folder, 'cg.2'), join(folder, 'absent.map'), 1, 10)
    expect(top[0]).toEqual({ name: 'generated code (not in the perf map)', perRequest: 1400 })
  })
})
