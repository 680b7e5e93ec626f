/**
 * A DSH `SessionPersistence` backend that keeps sessions in a sessdb store. DSH's own
 * `PersistenceCoordinator` keeps doing write-behind batching, migration, crash closers and
 * live adoption; sessdb does the storage, through its Node binding (`bindings/node`).
 * @module @sessdb/dsh-session-persistence
 */

import { Context, Service } from '@deepseek-ai/cordis'
import type { SessionEvent, SessionHeader, SessionId, SessionPreparation } from '@deepseek-ai/dsh-session'
import {
  type SessionRawArtifact,
  DEFAULT_PREPARED_SESSION_CACHE_SIZE,
  DEFAULT_WRITE_BATCH_MAX_DELAY_MS,
  PersistenceCoordinator,
  SessionPersistence,
  SessionPersistenceRevision,
  type PersistenceBackend,
  type SessionInspection,
  type SessionLocation,
  type SessionPersistenceSnapshot,
  type StoredPrefix,
  type StoredSuffix,
} from '@deepseek-ai/dsh-session-persistence'
import { RefusedSessions, refusedForContent } from './refused.ts'
import { Store, type OpenOptions, type SessdbStore, type StoreHeader } from './binding.ts'

/** Which sessions the store deletes by itself: the binding's `retention` open option. */
export type Retention = NonNullable<OpenOptions['retention']>

/** The store's background compaction: the binding's `compaction` open option. */
export type Compaction = NonNullable<OpenOptions['compaction']>

/** Plugin configuration. */
export interface Config {
  /** The sessdb store directory (created if missing). */
  path: string
  /** `sync` (the default): a batch is durable when the coordinator's append resolves. */
  durability?: 'sync' | 'buffered'
  /** Maximum cold Session preparations retained for history-to-resume reuse. */
  preparedSessionCacheSize?: number
  /** Fixed live-event coalescing window. */
  writeBatchMaxDelayMs?: number
  /**
   * Sessions the store deletes by itself — what DSH leaves to out-of-band maintenance —
   * applied at open and every `checkEveryMs`; their bytes go at the background compaction.
   */
  retention?: Retention
  /** The store's background compaction (on by default). */
  compaction?: Compaction
  /**
   * As DSH's JSONL backend's option of that name (default `true`): whether `readRaw` packs
   * delta-chunk runs into storage rows (within each write batch, as DSH's writer does).
   */
  packChunks?: boolean
}

/** sessdb stores the header line; DSH's metadata is that line without its `type`. */
function toMeta(header: Record<string, unknown>): SessionHeader {
  const { type: _type, ...meta } = header
  return meta as unknown as SessionHeader
}

function toHeaderLine(meta: SessionHeader): StoreHeader {
  // The store validates the header line itself (a missing `cwd` is refused there, by name).
  return { type: 'session', ...meta } as StoreHeader
}

/**
 * Events the store read back, as DSH's type: the store holds only events its acceptance
 * function admitted (DSH's rules), so each is one of DSH's event shapes.
 */
function dshEvents(events: readonly unknown[]): SessionEvent[] {
  return events as SessionEvent[]
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: string } | undefined)?.code === 'NOT_FOUND'
}

/**
 * `work`, unless `signal` aborts first: then rejected at once with the signal's reason (a
 * store call already running ends by itself, its result dropped) — DSH's own backends check
 * their signal around every await; this also stops waiting in the middle of one.
 */
async function abortable<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  if (signal === undefined) return work()
  signal.throwIfAborted()
  let onAbort = (): void => {}
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([work(), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** The error every call after `close()` rejects with: nothing is taken and then dropped. */
function closedError(path: string): Error {
  const e = new Error(
    `session-persistence-sessdb: the backend of ${path} is closed (DSH's coordinator closes it after its final drain); ` +
      'a call after that is refused rather than reopening the store behind the shutdown',
  ) as Error & { code: string }
  e.code = 'CLOSED'
  return e
}

/** The storage primitives DSH's coordinator calls, over one sessdb store. */
class SessdbBackend implements PersistenceBackend<never> {
  readonly name = 'session-persistence-sessdb'
  private opened?: Promise<SessdbStore>
  private closed = false
  /** Calls under way: `close()` waits for every one before it closes the store. */
  private readonly inFlight = new Set<Promise<unknown>>()
  private readonly refused: RefusedSessions

  constructor(private readonly config: Config) {
    this.refused = new RefusedSessions(config.path)
  }

  /** The store, opened on first use; after `close()`, a `CLOSED` error (never a reopen). */
  store(): Promise<SessdbStore> {
    if (this.closed) return Promise.reject(closedError(this.config.path))
    this.opened ??= this.open()
    return this.opened
  }

  /** Runs one backend call, counted as in flight until it settles; refused once closed. */
  private run<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(closedError(this.config.path))
    const p = work()
    this.inFlight.add(p)
    const forget = (): void => {
      this.inFlight.delete(p)
    }
    p.then(forget, forget)
    return p
  }

  private async open(): Promise<SessdbStore> {
    // The refused sessions are listed while the store opens (two trips to the thread pool at
    // once, not one after the other: PERFORMANCE.md); the listing never rejects.
    const refusedIds = this.refused.ids()
    const store = await Store.open(this.config.path, {
      durability: this.config.durability ?? 'sync',
      retention: this.config.retention,
      compaction: this.config.compaction,
    })
    try {
      // A move to the refused sessions is two steps: the refused copy written whole, then the
      // session deleted from the store. Every later write of the session goes to the copy, so
      // an id in both is a crash between the steps: the second is finished here.
      for (const id of await refusedIds) {
        if (await store.revision(id) !== null) await store.deleteSession(id)
      }
    } catch (error) {
      await store.close()
      throw error
    }
    return store
  }

  loadStored(id: SessionId, signal?: AbortSignal): Promise<StoredPrefix<never> | undefined> {
    return this.run(() => abortable(signal, async () => {
      const refused = await this.refused.read(id)
      if (refused !== undefined) {
        return { meta: toMeta(refused.header), events: refused.events, revision: SessionPersistenceRevision(refused.revision) }
      }
      const store = await this.store()
      const revision = await store.revision(id)
      if (revision === null) return undefined
      try {
        const [header, events] = await Promise.all([store.header(id), store.read(id, 0)])
        return { meta: toMeta(header), events: dshEvents(events), revision: SessionPersistenceRevision(revision) }
      } catch (error) {
        if (isNotFound(error)) return undefined
        throw error
      }
    }))
  }

  readStoredRevision(id: SessionId, signal?: AbortSignal): Promise<SessionPersistenceRevision | undefined> {
    return this.run(() => abortable(signal, async () => {
      const refused = await this.refused.read(id)
      if (refused !== undefined) return SessionPersistenceRevision(refused.revision)
      const revision = await (await this.store()).revision(id)
      return revision === null ? undefined : SessionPersistenceRevision(revision)
    }))
  }

  loadStoredFrom(id: SessionId, fromSeq: number, signal?: AbortSignal): Promise<StoredSuffix | undefined> {
    return this.run(() => abortable(signal, async () => {
      const refused = await this.refused.read(id)
      if (refused !== undefined) {
        return { meta: toMeta(refused.header), events: refused.events.filter(e => e.seq >= fromSeq) }
      }
      const store = await this.store()
      try {
        const [header, events] = await Promise.all([store.header(id), store.read(id, fromSeq)])
        return { meta: toMeta(header), events: dshEvents(events) }
      } catch (error) {
        if (isNotFound(error)) return undefined
        throw error
      }
    }))
  }

  appendBatch(meta: SessionHeader, events: readonly SessionEvent[], isMaterialized: boolean): Promise<void> {
    return this.run(() => this.appendBatchNow(meta, events, isMaterialized))
  }

  private async appendBatchNow(meta: SessionHeader, events: readonly SessionEvent[], isMaterialized: boolean): Promise<void> {
    if (await this.refused.has(meta.id)) {
      await this.refused.append(meta.id, events)
      return
    }
    const store = await this.store()
    try {
      if (!isMaterialized) {
        await store.createSession(toHeaderLine(meta), events, { exact: true, migrateLegacy: true, batchStart: true })
      } else if (events.length > 0) {
        await store.appendBatch(meta.id, events, { migrateLegacy: true, batchStart: true })
      }
    } catch (error) {
      if (!refusedForContent(error)) throw error
      // Content sessdb refuses: the session moves, whole, to the refused sessions (refused.ts).
      const stored = isMaterialized ? dshEvents(await store.read(meta.id, 0)) : []
      await this.refused.start(meta, [...stored, ...events])
      if (isMaterialized) await store.deleteSession(meta.id)
    }
  }

  commitRepair(meta: SessionHeader, _torn: never | undefined, closers: readonly SessionEvent[]): Promise<void> {
    return this.run(async () => {
      // sessdb cut any torn tail when it opened the store: only the closers are left to write.
      if (closers.length === 0) return
      if (await this.refused.has(meta.id)) await this.refused.append(meta.id, closers)
      else await (await this.store()).appendBatch(meta.id, closers, { batchStart: true })
    })
  }

  list(signal?: AbortSignal): Promise<SessionHeader[]> {
    return this.run(() => abortable(signal, async () => {
      const refused = (await this.refused.all()).map(r => toMeta(r.header))
      // The headers of `listSnapshots`' rows (already without `type`), in no order.
      const listed = await (await this.store()).listSnapshots()
      const out: SessionHeader[] = new Array(listed.length)
      for (let i = 0; i < listed.length; i++) out[i] = listed[i]!.header as unknown as SessionHeader
      if (refused.length > 0) out.push(...refused)
      return out
    }))
  }

  listSnapshots(signal?: AbortSignal): Promise<SessionPersistenceSnapshot[]> {
    return this.run(() => abortable(signal, async () => {
      const refused = (await this.refused.all()).map(r => ({
        header: toMeta(r.header),
        revision: SessionPersistenceRevision(r.revision),
      }))
      // The store's rows as DSH lists them (`{ header, revision }`, the header without
      // `type`), in no order — DSH promises none — from one parse of one buffer, returned as
      // they are: `SessionPersistenceRevision` brands a string and changes nothing.
      const listed = (await (await this.store()).listSnapshots()) as unknown as SessionPersistenceSnapshot[]
      if (refused.length > 0) listed.push(...refused)
      return listed
    }))
  }

  readRaw(id: SessionId, signal?: AbortSignal): Promise<SessionRawArtifact | undefined> {
    return this.run(() => abortable(signal, async () => {
      const refused = await this.refused.read(id)
      if (refused !== undefined) return { meta: toMeta(refused.header), filename: 'session.jsonl', content: refused.text }
      const content = await (await this.store()).rawJsonl(id, { pack: this.config.packChunks ?? true })
      if (content === null) return undefined
      const header = JSON.parse(content.slice(0, content.indexOf('\n'))) as Record<string, unknown>
      return { meta: toMeta(header), filename: 'session.jsonl', content }
    }))
  }

  /**
   * Refuses every later call (`CLOSED`), waits for the calls under way to settle, then
   * closes the store: nothing DSH handed over before is cut short, and nothing after is
   * taken silently and dropped when the process exits.
   */
  async close(): Promise<void> {
    this.closed = true
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight])
    if (this.opened === undefined) return
    const opened = this.opened
    this.opened = undefined
    let store: SessdbStore
    try {
      store = await opened
    } catch {
      return // it never opened: nothing to close
    }
    await store.close()
  }
}

/** A DSH `SessionPersistence` provider over a sessdb store. */
export class SessdbSessionPersistence extends SessionPersistence {
  /** `readRaw` gives the session's JSONL exactly as DSH's own JSONL writer writes it. */
  override readonly supportsRawArtifacts = true
  override readonly name = 'session-persistence-sessdb'

  static inject = ['sessions']

  private readonly backend: SessdbBackend
  private readonly coordinator: PersistenceCoordinator<never>

  constructor(ctx: Context, public config: Config) {
    super(ctx)
    this.backend = new SessdbBackend(config)
    this.coordinator = new PersistenceCoordinator(this.ctx, this.backend, {
      preparedSessionCacheSize: config.preparedSessionCacheSize ?? DEFAULT_PREPARED_SESSION_CACHE_SIZE,
      writeBatchMaxDelayMs: config.writeBatchMaxDelayMs ?? DEFAULT_WRITE_BATCH_MAX_DELAY_MS,
    })
  }

  /**
   * Resolves to `true` once the store's background work (retention, compaction) is idle, or
   * `false` after `timeoutMs`: before a shutdown that should not cut a compaction short, or
   * to see what the retention policy deleted at open.
   */
  async waitMaintenance(timeoutMs = 60000): Promise<boolean> {
    return (await this.backend.store()).waitMaintenance(timeoutMs)
  }

  /** Opens the store when the plugin starts (a locked or damaged store fails here). */
  protected async [Service.init](): Promise<void> {
    await this.backend.store()
  }

  /** sessdb keeps every session in one log, not one artifact per session. */
  locate(_meta: SessionHeader): SessionLocation | undefined {
    return undefined
  }

  create(meta: SessionHeader): Promise<void> {
    return this.coordinator.create(meta)
  }

  append(id: SessionId, events: readonly SessionEvent[]): Promise<void> {
    return this.coordinator.append(id, events)
  }

  override prepare(id: SessionId, signal?: AbortSignal): Promise<SessionPreparation> {
    return this.coordinator.prepare(id, signal)
  }

  load(id: SessionId): Promise<SessionInspection> {
    return this.coordinator.load(id)
  }

  inspect(id: SessionId, signal?: AbortSignal): Promise<SessionInspection> {
    return this.coordinator.inspect(id, signal)
  }

  readFrom(id: SessionId, fromSeq: number, signal?: AbortSignal): Promise<{ meta: SessionHeader; events: SessionEvent[] }> {
    return this.coordinator.readFrom(id, fromSeq, signal)
  }

  override readRaw(id: SessionId, signal?: AbortSignal): Promise<SessionRawArtifact | undefined> {
    return this.backend.readRaw(id, signal)
  }

  list(signal?: AbortSignal): Promise<SessionHeader[]> {
    return this.backend.list(signal)
  }

  listSnapshots(signal?: AbortSignal): Promise<SessionPersistenceSnapshot[]> {
    return this.backend.listSnapshots(signal)
  }
}

export default SessdbSessionPersistence
