// A benchmark in DSH's own process, under DSH's own `PersistenceCoordinator`: the sessdb
// backend beside DSH's JSONL backend (uncompressed and zstd) and DSH's SQLite backend, on
// DSH's chunk-heavy turns, each backend plugged into a fresh cordis context as DSH plugs it.
// Skipped unless SESSDB_DSH_BENCH=1 (it is a measurement, not a test):
//
//   SESSDB_DSH_BENCH=1 ../shared/dsh-harness/run.sh bindings/dsh -t benchmark
//
// Rows: appends (one turn of 44 events per `append`, 8 sessions round robin, events/s); the
// latency of one such durable append (p50, p99); the same appends with the 8 sessions at
// once (each session's turns in order, the sessions concurrent); resuming a long session
// (`load` in a fresh context, as after a restart); `listSnapshots` of many sessions (fresh
// context). Medians of REPS runs, the backends interleaved in each, in reverse order every
// other run.

import { describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Context, type Fiber } from '@deepseek-ai/cordis'
import SessionStore, { SessionId, type SessionEvent, type SessionHeader } from '@deepseek-ai/dsh-session'
import {
  DEFAULT_PREPARED_SESSION_CACHE_SIZE,
  DEFAULT_WRITE_BATCH_MAX_DELAY_MS,
  PersistenceCoordinator,
  SessionPersistence,
  SessionPersistenceRevision,
  type PersistenceBackend,
  type SessionLocation,
  type SessionPersistenceSnapshot,
} from '@deepseek-ai/dsh-session-persistence'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'
import SqliteSessionPersistence from '@deepseek-ai/dsh-session-persistence-sqlite'
import SessdbSessionPersistence from '../src/index.ts'
import { meta } from '../../../session/session-persistence/tests/contract.ts'

const REPS = Number(process.env.SESSDB_DSH_BENCH_REPS ?? 3)

/**
 * The floor: DSH's coordinator over a backend that keeps each batch in memory (no encoding,
 * no file), so its rows are what DSH's own per-append work allows any backend.
 */
type MemorySessions = Map<string, { meta: SessionHeader, events: SessionEvent[], revision: number }>
/** The memory backend's sessions by directory: a fresh context finds them again, as on disk. */
const memoryStores = new Map<string, MemorySessions>()
class MemoryBackend implements PersistenceBackend<never> {
  readonly name = 'memory'
  constructor(private readonly sessions: MemorySessions) {}
  async loadStored(id: SessionId) {
    const s = this.sessions.get(id)
    return s && { meta: s.meta, events: [...s.events], revision: SessionPersistenceRevision(String(s.revision)) }
  }
  async readStoredRevision(id: SessionId) {
    const s = this.sessions.get(id)
    return s && SessionPersistenceRevision(String(s.revision))
  }
  async appendBatch(meta: SessionHeader, events: readonly SessionEvent[], isMaterialized: boolean) {
    let s = this.sessions.get(meta.id)
    if (!isMaterialized || s === undefined) this.sessions.set(meta.id, s = { meta, events: [], revision: 0 })
    s.events.push(...events)
    s.revision++
  }
  async commitRepair(meta: SessionHeader, _torn: never | undefined, closers: readonly SessionEvent[]) {
    await this.appendBatch(meta, closers, true)
  }
  async list() {
    return [...this.sessions.values()].map(s => s.meta)
  }
}

/** DSH's coordinator over `MemoryBackend`, plugged as DSH's backends are. */
class MemoryPersistence extends SessionPersistence {
  override readonly name = 'memory'
  static inject = ['sessions']
  private readonly backend: MemoryBackend
  private readonly coordinator: PersistenceCoordinator<never>
  constructor(ctx: Context, public config: { dir: string }) {
    super(ctx)
    let sessions = memoryStores.get(config.dir)
    if (sessions === undefined) memoryStores.set(config.dir, sessions = new Map())
    this.backend = new MemoryBackend(sessions)
    this.coordinator = new PersistenceCoordinator(this.ctx, this.backend, {
      preparedSessionCacheSize: DEFAULT_PREPARED_SESSION_CACHE_SIZE,
      writeBatchMaxDelayMs: DEFAULT_WRITE_BATCH_MAX_DELAY_MS,
    })
  }
  locate(): SessionLocation | undefined { return undefined }
  create(meta: SessionHeader) { return this.coordinator.create(meta) }
  append(id: SessionId, events: readonly SessionEvent[]) { return this.coordinator.append(id, events) }
  override prepare(id: SessionId, signal?: AbortSignal) { return this.coordinator.prepare(id, signal) }
  load(id: SessionId) { return this.coordinator.load(id) }
  inspect(id: SessionId, signal?: AbortSignal) { return this.coordinator.inspect(id, signal) }
  readFrom(id: SessionId, fromSeq: number, signal?: AbortSignal) { return this.coordinator.readFrom(id, fromSeq, signal) }
  list() { return this.backend.list() }
  async listSnapshots(): Promise<SessionPersistenceSnapshot[]> {
    const out: SessionPersistenceSnapshot[] = []
    for (const meta of await this.backend.list()) out.push({ header: meta, revision: (await this.backend.readStoredRevision(meta.id))! })
    return out
  }
}

type Plug = (ctx: Context, dir: string) => Promise<Fiber>
const backends: Record<string, Plug> = {
  'DSH JSONL (none)': (ctx, dir) => ctx.plugin(JsonlSessionPersistence, { root: join(dir, 'jsonl'), compression: 'none' }),
  'DSH JSONL (zstd)': (ctx, dir) => ctx.plugin(JsonlSessionPersistence, { root: join(dir, 'jsonl') }),
  'DSH SQLite (wal)': (ctx, dir) => ctx.plugin(SqliteSessionPersistence, { path: join(dir, 'db.sqlite') }),
  'sessdb sync': (ctx, dir) => ctx.plugin(SessdbSessionPersistence, { path: join(dir, 'store') }),
  'sessdb buffered': (ctx, dir) => ctx.plugin(SessdbSessionPersistence, { path: join(dir, 'store'), durability: 'buffered' }),
  'memory (floor)': (ctx, dir) => ctx.plugin(MemoryPersistence, { dir }),
}

async function mount(plug: Plug, dir: string): Promise<{ ctx: Context, fiber: Fiber }> {
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  const fiber = await plug(ctx, dir)
  return { ctx, fiber }
}

/** Turn `turn` of a session whose next seq is `seq`: 44 events, 40 of them text chunks. */
function turnEvents(seq: number, turn: number): SessionEvent[] {
  const out: SessionEvent[] = []
  const push = (type: string, data: unknown) => out.push({ type, seq: seq + out.length, time: 1000 + seq + out.length, data } as unknown as SessionEvent)
  push('turn/start', { turn })
  push('step/start', { turn, step: 1 })
  for (let i = 0; i < 40; i++) push('assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: `token ${i} of turn ${turn} ` } })
  push('step/end', { turn, step: 1 })
  push('turn/end', { turn, reason: { kind: 'completed' } })
  return out
}

/** Appends `turns` turns to `sessions` new sessions, round robin; per-append latencies. */
async function appendTurns(ctx: Context, prefix: string, sessions: number, turns: number): Promise<number[]> {
  const next = new Array<number>(sessions).fill(0)
  for (let s = 0; s < sessions; s++) await ctx.sessionPersistence.create(meta(SessionId(`${prefix}-${s}`), '/w'))
  const lat: number[] = []
  for (let t = 1; t <= turns; t++) {
    for (let s = 0; s < sessions; s++) {
      const batch = turnEvents(next[s]!, t)
      const started = performance.now()
      await ctx.sessionPersistence.append(SessionId(`${prefix}-${s}`), batch)
      lat.push(performance.now() - started)
      next[s]! += batch.length
    }
  }
  return lat
}

/**
 * Appends `turns` turns to each of `sessions` new sessions, all sessions at once (each one's
 * appends in order, as one user's turns come): what a host serving many users asks of its
 * backend. Per-append latencies.
 */
async function appendTurnsAtOnce(ctx: Context, prefix: string, sessions: number, turns: number): Promise<number[]> {
  for (let s = 0; s < sessions; s++) await ctx.sessionPersistence.create(meta(SessionId(`${prefix}-${s}`), '/w'))
  const lat: number[] = []
  await Promise.all(Array.from({ length: sessions }, async (_, s) => {
    let next = 0
    for (let t = 1; t <= turns; t++) {
      const batch = turnEvents(next, t)
      const started = performance.now()
      await ctx.sessionPersistence.append(SessionId(`${prefix}-${s}`), batch)
      lat.push(performance.now() - started)
      next += batch.length
    }
  }))
  return lat
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!
const pct = (v: number[], q: number): number => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(q * v.length))]!

describe.skipIf(process.env.SESSDB_DSH_BENCH !== '1')('benchmark in DSH\'s process', () => {
  it('appends, durable append latency, resume and listing, sessdb beside DSH\'s backends', async () => {
    const rows: Record<string, Record<string, number[]>> = {}
    const add = (backend: string, row: string, v: number) => ((rows[row] ??= {})[backend] ??= []).push(v)
    for (let rep = 0; rep < REPS; rep++) {
      // The backends in reverse order every other repetition: a backend pays for what the
      // one before it left (its garbage, its files' writeback), so no backend always follows
      // the same one.
      const order = Object.entries(backends)
      if (rep % 2 === 1) order.reverse()
      for (const [name, plug] of order) {
        const dir = await mkdtemp(join(tmpdir(), 'dsh-bench-'))
        try {
          // Appends: 8 sessions x 25 turns (8,800 events).
          let m = await mount(plug, dir)
          const t0 = performance.now()
          const lat = await appendTurns(m.ctx, 'a', 8, 25)
          add(name, 'appends (events/s)', (8 * 25 * 44) / ((performance.now() - t0) / 1000))
          add(name, 'one turn appended, p50 (ms)', pct(lat, 0.5))
          add(name, 'one turn appended, p99 (ms)', pct(lat, 0.99))
          // Appends: 8 sessions x 25 turns at once (8,800 events).
          const t3 = performance.now()
          const latOnce = await appendTurnsAtOnce(m.ctx, 'once', 8, 25)
          add(name, 'appends, 8 sessions at once (events/s)', (8 * 25 * 44) / ((performance.now() - t3) / 1000))
          add(name, 'one turn appended at once, p50 (ms)', pct(latOnce, 0.5))
          // A long session: 400 turns (17,600 events), resumed in a fresh context.
          await appendTurns(m.ctx, 'long', 1, 400)
          // Many sessions for the listing: 1,000 of one turn.
          await appendTurns(m.ctx, 'many', 1000, 1)
          await m.fiber.dispose()
          m = await mount(plug, dir)
          const t1 = performance.now()
          const loaded = await m.ctx.sessionPersistence.load(SessionId('long-0'))
          add(name, 'resume 17,600 events (ms)', performance.now() - t1)
          expect(loaded.events.length).toBe(400 * 44)
          await m.fiber.dispose()
          m = await mount(plug, dir)
          const t2 = performance.now()
          const listed = await m.ctx.sessionPersistence.listSnapshots()
          add(name, 'listSnapshots of 1,017 sessions (ms)', performance.now() - t2)
          expect(listed.length).toBe(1017)
          await m.fiber.dispose()
        } finally {
          await rm(dir, { recursive: true, force: true })
          memoryStores.delete(dir)
        }
      }
    }
    const lines = [`DSH process benchmark (Node ${process.versions.node}, medians of ${REPS})`]
    for (const [row, byBackend] of Object.entries(rows)) {
      lines.push(`  ${row}`)
      for (const [backend, v] of Object.entries(byBackend)) lines.push(`    ${backend.padEnd(18)} ${median(v).toFixed(2)}`)
    }
    console.log(lines.join('\n'))
  }, 600_000)
})
