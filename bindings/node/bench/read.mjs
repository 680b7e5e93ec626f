// Reading a long session back into JavaScript (DSH's resume): `read` (fresh objects) and
// `readLines` (JSON lines) of one session of EVENTS chunk-heavy events, beside what DSH's JSONL
// backend does with its own file — read it whole, split the lines, `JSON.parse` each — on the
// same events written as a JSONL file. Medians of 7 runs each, interleaved.
//
//   node bindings/node/bench/read.mjs [EVENTS]      (after bindings/node/build.sh --release)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Store } from '../index.mjs'
import { turnEvents } from './turn.mjs'

const n = Number(process.argv[2] ?? 40000)
const dir = mkdtempSync(join(tmpdir(), 'sessdb-read-bench-'))
const header = { type: 'session', version: 0, id: 'long', createdAt: 1000, cwd: '/w' }
// Turns of: start, step start, a run of text chunks, step end, end — DSH's chunk-heavy shape.
const events = []
for (let turn = 1; events.length < n; turn++) events.push(...turnEvents(events.length, turn))
const store = await Store.open(join(dir, 'store'))
await store.createSession(header, [], { exact: true })
for (let i = 0; i < events.length; i += 1000) await store.appendBatch('long', events.slice(i, i + 1000))
const file = join(dir, 'session.jsonl')
writeFileSync(file, [JSON.stringify(header), ...events.map((e) => JSON.stringify(e))].join('\n') + '\n')

const timed = async (f) => {
  const t = performance.now()
  const out = await f()
  return [performance.now() - t, out]
}
const rows = {
  'read (objects)': () => store.read('long'),
  'readLines (strings)': () => store.readLines('long'),
  'a JSONL file: read, split, JSON.parse each (DSH)': () =>
    readFileSync(file, 'utf8').split('\n').filter((l) => l).slice(1).map((l) => JSON.parse(l)),
}
const times = Object.fromEntries(Object.keys(rows).map((k) => [k, []]))
for (let rep = 0; rep < 7; rep++) {
  for (const [k, f] of Object.entries(rows)) {
    const [ms, out] = await timed(f)
    if (out.length !== events.length) throw new Error(`${k}: ${out.length} events`)
    times[k].push(ms)
  }
}
await store.close()
rmSync(dir, { recursive: true, force: true })
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]
console.log(`one session of ${events.length} events, Node ${process.versions.node}; medians of 7`)
const base = median(times['a JSONL file: read, split, JSON.parse each (DSH)'])
for (const [k, v] of Object.entries(times)) {
  console.log(`  ${k.padEnd(50)} ${median(v).toFixed(1).padStart(7)} ms   ${(base / median(v)).toFixed(2)}x the file's speed`)
}
