// The latency from an append to the subscriber seeing its event: `subscribe` (woken by the
// store's notification) beside a subscriber that polls `read` every 25 ms (how `subscribe`
// worked before). One append at a time, each waited for, so every figure is one event's trip;
// each append after a random pause of up to 25 ms, so that appends do not fall in step with
// the polling timer.
//
//   node bindings/node/bench/subscribe.mjs [EVENTS]      (after bindings/node/build.sh --release)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Store } from '../index.mjs'

const n = Number(process.argv[2] ?? 400)
const header = (id) => ({ type: 'session', version: 0, id, createdAt: 1000, cwd: '/w' })
const note = (seq) => ({ type: 'turn/start', seq, time: 1000 + seq, data: { turn: seq + 1 } })
const end = (seq) => ({ type: 'turn/end', seq, time: 1000 + seq, data: { turn: seq, reason: { kind: 'completed' } } })
// Turns of one event pair: start at even seqs, end at odd ones.
const event = (seq) => (seq % 2 === 0 ? note(seq) : end(seq))

function stats(ms) {
  const s = [...ms].sort((a, b) => a - b)
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))]
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1] }
}

/** Appends `n` events one by one; `seen(seq)` resolves when the subscriber has it. */
async function measure(store, id, arrivals) {
  const ms = []
  for (let seq = 0; seq < n; seq++) {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 25))
    const t = performance.now()
    const arrived = arrivals(seq)
    await store.appendBatch(id, [event(seq)])
    await arrived
    ms.push(performance.now() - t)
  }
  return stats(ms)
}

function waiter() {
  const waiting = new Map()
  return {
    arrivals: (seq) => new Promise((resolve) => waiting.set(seq, resolve)),
    got: (seq) => {
      waiting.get(seq)?.()
      waiting.delete(seq)
    },
  }
}

const dir = mkdtempSync(join(tmpdir(), 'sessdb-subscribe-bench-'))
const store = await Store.open(join(dir, 'store'))

// 1. subscribe: the store's notification.
await store.createSession(header('notified'), [], { exact: true })
const a = waiter()
const controller = new AbortController()
const following = (async () => {
  for await (const e of store.subscribe('notified', 0, { signal: controller.signal })) a.got(e.seq)
})()
const notified = await measure(store, 'notified', a.arrivals)
controller.abort()
await following

// 2. A subscriber that reads every 25 ms.
await store.createSession(header('polled'), [], { exact: true })
const b = waiter()
let next = 0
const timer = setInterval(async () => {
  for (const e of await store.read('polled', next)) {
    next = e.seq + 1
    b.got(e.seq)
  }
}, 25)
const polled = await measure(store, 'polled', b.arrivals)
clearInterval(timer)

await store.close()
rmSync(dir, { recursive: true, force: true })
const f = (s) => `p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms, max ${s.max.toFixed(3)} ms`
console.log(`append -> subscriber, ${n} events, Node ${process.versions.node}`)
console.log(`  subscribe (notification): ${f(notified)}`)
console.log(`  polling read every 25 ms: ${f(polled)}`)
console.log(`  p50 ratio: ${(polled.p50 / notified.p50).toFixed(1)}x`)
