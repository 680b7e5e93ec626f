// Appending turns from JavaScript, one awaited call at a time as a harness does: `appendBatch`
// of one turn (44 events, 40 of them text chunks: DSH's chunk-heavy shape) to 8 sessions round
// robin, `buffered` and `sync`, beside what a JSONL writer does with the same lines — each turn's
// lines appended to the session's own file with `fs.promises.appendFile` (DSH's JSONL backend
// without compression), and that plus `fdatasync` for the durable row. Time per turn, medians
// of 5 runs each, interleaved.
//
//   node bindings/node/bench/append.mjs [TURNS]      (after bindings/node/build.sh --release)
import { mkdtempSync, rmSync } from 'node:fs'
import { appendFile, open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Store } from '../index.mjs'
import { turnEvents } from './turn.mjs'

const turns = Number(process.argv[2] ?? 100)
const SESSIONS = 8

async function sessdb(dir, durability) {
  const store = await Store.open(join(dir, 'store'), { durability })
  const next = []
  for (let s = 0; s < SESSIONS; s++) {
    const header = { type: 'session', version: 0, id: `s${s}`, createdAt: 1000, cwd: '/w' }
    next.push(await store.createSession(header, [], { exact: true }))
  }
  const t0 = performance.now()
  for (let turn = 1; turn <= turns; turn++) {
    for (let s = 0; s < SESSIONS; s++) {
      const batch = turnEvents(next[s], turn)
      await store.appendBatch(`s${s}`, batch)
      next[s] += batch.length
    }
  }
  const ms = performance.now() - t0
  await store.close()
  return ms
}

async function jsonl(dir, durable) {
  const next = new Array(SESSIONS).fill(0)
  const files = []
  for (let s = 0; s < SESSIONS; s++) files.push(join(dir, `s${s}.jsonl`))
  const handles = durable ? await Promise.all(files.map((f) => open(f, 'a'))) : []
  const t0 = performance.now()
  for (let turn = 1; turn <= turns; turn++) {
    for (let s = 0; s < SESSIONS; s++) {
      const batch = turnEvents(next[s], turn)
      const text = batch.map((e) => JSON.stringify(e)).join('\n') + '\n'
      if (durable) {
        await handles[s].appendFile(text)
        await handles[s].datasync()
      } else {
        await appendFile(files[s], text)
      }
      next[s] += batch.length
    }
  }
  const ms = performance.now() - t0
  for (const h of handles) await h.close()
  return ms
}

const rows = {
  'sessdb appendBatch, buffered': (dir) => sessdb(dir, 'buffered'),
  'JSONL file per session, appendFile': (dir) => jsonl(dir, false),
  'sessdb appendBatch, sync': (dir) => sessdb(dir, 'sync'),
  'JSONL file per session, appendFile + fdatasync': (dir) => jsonl(dir, true),
}
const times = Object.fromEntries(Object.keys(rows).map((k) => [k, []]))
for (let rep = 0; rep < 5; rep++) {
  for (const [k, f] of Object.entries(rows)) {
    const dir = mkdtempSync(join(tmpdir(), 'sessdb-append-bench-'))
    try {
      times[k].push((await f(dir)) * 1000 / (turns * SESSIONS))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]
console.log(`${SESSIONS} sessions x ${turns} turns of 44 events, one awaited call each, Node ${process.versions.node}; medians of 5 (µs per turn)`)
const peer = { buffered: median(times['JSONL file per session, appendFile']), sync: median(times['JSONL file per session, appendFile + fdatasync']) }
for (const [k, v] of Object.entries(times)) {
  const base = k.includes('sync') ? peer.sync : peer.buffered
  console.log(`  ${k.padEnd(48)} ${median(v).toFixed(1).padStart(8)} µs   ${(base / median(v)).toFixed(2)}x the JSONL writer's speed`)
}
