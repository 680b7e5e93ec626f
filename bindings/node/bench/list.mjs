// Listing a store's sessions into JavaScript (DSH's `listSnapshots`): `list()` of N sessions
// (each created with a header only), median and minimum of 15 calls.
//
//   node bindings/node/bench/list.mjs [SESSIONS]    (after bindings/node/build.sh --release)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Store } from '../index.mjs'
const n = Number(process.argv[2] ?? 1000)
const dir = mkdtempSync(join(tmpdir(), 'sessdb-list-bench-'))
const store = await Store.open(join(dir, 'store'))
for (let i = 0; i < n; i++) {
  const id = `session-${String(i).padStart(6, '0')}`
  await store.createSession({ type: 'session', version: 0, id, createdAt: 1000 + i, cwd: '/work/project' }, [], { exact: true })
}
const times = []
for (let rep = 0; rep < 15; rep++) {
  const t = performance.now()
  const rows = await store.list()
  times.push(performance.now() - t)
  if (rows.length !== n) throw new Error('rows')
}
await store.close()
rmSync(dir, { recursive: true, force: true })
times.sort((a, b) => a - b)
console.log(`list of ${n}: median ${times[7].toFixed(2)} ms (min ${times[0].toFixed(2)})`)
