// Listing many sessions in DSH's own process: a fresh cordis context mounts the backend and
// calls `listSnapshots` (what DSH's session picker does after a start), sessdb beside DSH's
// SQLite backend, on stores of 2,000 and of 100,000 sessions of one short turn each. Skipped
// unless SESSDB_DSH_BENCH=1 (a measurement, not a test):
//
//   SESSDB_DSH_BENCH=1 ../shared/dsh-harness/run.sh bindings/dsh -t listing
//
// Each store is built once per backend through DSH's coordinator; the mounts and listings
// are then timed REPS times, the backends interleaved. Medians; the first listing of each
// store is left out (it pays the page cache's first read of files just written).

import { describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Context, type Fiber } from '@deepseek-ai/cordis'
import SessionStore, { SessionId, type SessionEvent } from '@deepseek-ai/dsh-session'
import SqliteSessionPersistence from '@deepseek-ai/dsh-session-persistence-sqlite'
import SessdbSessionPersistence from '../src/index.ts'
import { meta } from '../../../session/session-persistence/tests/contract.ts'

const REPS = Number(process.env.SESSDB_DSH_BENCH_REPS ?? 5)
const SIZES = (process.env.SESSDB_DSH_BENCH_SIZES ?? '2000,100000').split(',').map(Number)

type Plug = (ctx: Context, dir: string) => Promise<Fiber>
const backends: Record<string, Plug> = {
  'DSH SQLite (wal)': (ctx, dir) => ctx.plugin(SqliteSessionPersistence, { path: join(dir, 'db.sqlite') }),
  'sessdb': (ctx, dir) => ctx.plugin(SessdbSessionPersistence, { path: join(dir, 'store'), durability: 'buffered' }),
}

async function mount(plug: Plug, dir: string): Promise<{ ctx: Context, fiber: Fiber }> {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  const fiber = await plug(ctx, dir)
  return { ctx, fiber }
}

/** One short turn: a step of one text chunk. */
function turn(s: number): SessionEvent[] {
  const out: SessionEvent[] = []
  const push = (type: string, data: unknown) => out.push({ type, seq: out.length, time: 1000 + s + out.length, data } as unknown as SessionEvent)
  push('turn/start', { turn: 1 })
  push('step/start', { turn: 1, step: 1 })
  push('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: `answer ${s}` } })
  push('step/end', { turn: 1, step: 1 })
  push('turn/end', { turn: 1, reason: { kind: 'completed' } })
  return out
}

/** Creates `n` sessions of one turn each, 256 at a time. */
async function build(plug: Plug, dir: string, n: number): Promise<void> {
  const m = await mount(plug, dir)
  for (let start = 0; start < n; start += 256) {
    const ids = Array.from({ length: Math.min(256, n - start) }, (_, k) => start + k)
    await Promise.all(ids.map(async s => {
      await m.ctx.sessionPersistence.create(meta(SessionId(`s-${s}`), '/w'))
      await m.ctx.sessionPersistence.append(SessionId(`s-${s}`), turn(s))
    }))
  }
  await m.fiber.dispose()
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!

describe.skipIf(process.env.SESSDB_DSH_BENCH !== '1')('listing in DSH\'s process', () => {
  it('mount + listSnapshots, sessdb beside DSH\'s SQLite backend', async () => {
    const lines = [`DSH process listing (Node ${process.versions.node}, medians of ${REPS}, first listing left out)`]
    for (const n of SIZES) {
      const dirs: Record<string, string> = {}
      try {
        for (const [name, plug] of Object.entries(backends)) {
          dirs[name] = await mkdtemp(join(tmpdir(), 'dsh-list-'))
          const t = performance.now()
          await build(plug, dirs[name]!, n)
          lines.push(`  built ${n} sessions with ${name} in ${((performance.now() - t) / 1000).toFixed(1)} s`)
        }
        const times: Record<string, { mount: number[], list: number[] }> = {}
        const bare: number[] = []
        for (let rep = 0; rep <= REPS; rep++) {
          // The floor every backend pays: a context with DSH's session service and no backend.
          const tb = performance.now()
          const ctx = new Context()
          await ctx.plugin(SessionStore)
          if (rep > 0) bare.push(performance.now() - tb)
          // Each backend first in every other repetition: the one after pays for what the
          // one before left (its store's close, the garbage of its listing).
          const order = Object.entries(backends)
          if (rep % 2 === 1) order.reverse()
          for (const [name, plug] of order) {
            const t0 = performance.now()
            const m = await mount(plug, dirs[name]!)
            const t1 = performance.now()
            const listed = await m.ctx.sessionPersistence.listSnapshots()
            const t2 = performance.now()
            expect(listed.length).toBe(n)
            await m.fiber.dispose()
            if (rep === 0) continue
            const row = (times[name] ??= { mount: [], list: [] })
            row.mount.push(t1 - t0)
            row.list.push(t2 - t0)
          }
        }
        lines.push(`  ${n} sessions: mount (ms), mount + listSnapshots (ms); a context with no backend ${median(bare).toFixed(2)} ms`)
        for (const [name, row] of Object.entries(times)) {
          lines.push(`    ${name.padEnd(18)} ${median(row.mount).toFixed(2).padStart(9)} ${median(row.list).toFixed(2).padStart(9)}`)
        }
        const [sqlite, sessdb] = [times['DSH SQLite (wal)']!, times['sessdb']!]
        lines.push(`    SQLite ÷ sessdb: ${(median(sqlite.list) / median(sessdb.list)).toFixed(2)}×`)
      } finally {
        for (const dir of Object.values(dirs)) await rm(dir, { recursive: true, force: true })
      }
    }
    console.log(lines.join('\n'))
  }, 3_600_000)
})
