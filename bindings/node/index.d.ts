// Type declarations of the sessdb Node binding (`index.js`).

/** A DSH v0 session header line, as an object. */
export interface SessionHeader {
  type: 'session'
  version: number
  id: string
  createdAt: number
  cwd: string
  parentSession?: string
  seedLength?: number
  delegationDepth?: number
  [key: string]: unknown
}

/** A DSH v0 event, as an object (or its JSONL line as a string). */
export interface SessionEvent {
  type: string
  seq: number
  time: number
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: number[]
  [key: string]: unknown
}

export type EventInput = SessionEvent | string

export interface OpenOptions {
  /** `'buffered'` (default: resolved once in the page cache) or `'sync'` (resolved once durable). */
  durability?: 'buffered' | 'sync'
  /** Open read-only, beside a live writer. */
  readOnly?: boolean
  /**
   * The writer's background compaction: on by default (a segment written again once half of
   * it is dead, at least 64 KiB); `{ background: false }` turns it off (`compact()` still works).
   */
  compaction?: { background?: boolean; deadFraction?: number; minDeadBytes?: number }
  /**
   * Which sessions the writer deletes by itself, at open and every `checkEveryMs` (default
   * 60000): those last written more than `maxAgeMs` ago, then the oldest while the live bytes
   * are more than `maxLiveBytes`. Default: none.
   */
  retention?: { maxAgeMs?: number; maxLiveBytes?: number; checkEveryMs?: number }
}

export interface CompactResult {
  dryRun: boolean
  reclaimedBytes: number
  segments: number
  sessionsErased: number
  /** Deleted sessions of which records stay because a live fork reads them. */
  sessionsKept: number
}

export interface Maintenance {
  compactions: number
  bytesReclaimed: number
  sessionsExpired: number
  lastError: string | null
}

export interface Space {
  liveBytes: number
  deadBytes: number
  /** Compaction's run and tombstone tables beside the records (12 bytes per record left out, kept for the tombstone TTL). */
  tableBytes: number
}

export interface SessionRow {
  id: string
  header: SessionHeader
  events: number
  parent: string | null
  turnOpen: boolean
  /** Changes with every append and repair and with a re-creation; equal otherwise. */
  revision: string
}

export interface AppendResult {
  from: number
  to: number
}

export interface RepairResult {
  closers: number[]
  endSeed: number | null
}

export interface Stats {
  sessions: number
  events: number
  segments: number
  /** The log's end position (a position, not a size: compaction leaves gaps where records went). */
  endLsn: number
  /** The bytes the store's files take (segments and checkpoints), from their metadata. */
  diskBytes: number
  checkpointGeneration: number
}

export interface OpenFacts {
  checkpoint: number | null
  recordsReplayed: number
  bytesTruncated: number
  tornTailIgnored: number
}

/**
 * The fixed codes an `Error` of this binding carries (besides a refused event's rule name and
 * a fork's DSH code, e.g. `OPEN_TURN`): `CORRUPTION` comes with `segment`, `offset`, `kind`;
 * `LOCKED` with `lockFile`; `NOT_FOUND` and `EXISTS` with `session`; `NOT_A_STORE` for a
 * directory that holds other files and no store (a store is created only in a new or empty one); `FORMAT` is a refusal of
 * the import and migration layer; `NO_SPACE` a file the disk had no room for (`needed` and
 * `available` in the message; nothing changed); `SALVAGE_INTERRUPTED` a store a salvage that
 * died left half rewritten (open it with a salvage to finish it); `OVERTAKEN` (with `segment`)
 * a read-only view whose older segments a writer rewrote before the view first read them,
 * when the view could not be built again (a salvage is rewriting the store: read again
 * later); `ERROR` one of no other kind; `NO_ADDON` (thrown by the
 * `require` itself) when no addon for this platform is installed or it does not load.
 */
export type SessdbErrorCode =
  | 'CORRUPTION'
  | 'LOCKED'
  | 'NOT_FOUND'
  | 'NOT_A_STORE'
  | 'EXISTS'
  | 'POISONED'
  | 'READ_ONLY'
  | 'CLOSED'
  | 'IO'
  | 'NO_SPACE'
  | 'SALVAGE_INTERRUPTED'
  | 'OVERTAKEN'
  | 'INVALID_EVENT'
  | 'INVALID_HEADER'
  | 'INVALID_TYPE'
  | 'TOO_LARGE'
  | 'UNSUPPORTED_FORMAT'
  | 'UNSUPPORTED_STORE'
  | 'INVALID_ARGUMENT'
  | 'FORMAT'
  | 'ERROR'
  | 'NO_ADDON'

/**
 * Every rejection is an `Error` with a stable `code`: one of {@link SessdbErrorCode}, a refused
 * event's rule name (with `rule`, `session`, `seq`), or a fork's DSH code (`OPEN_TURN`, ...).
 */
export interface SessdbError extends Error {
  code: SessdbErrorCode | string
  rule?: string
  session?: string
  seq?: number
  segment?: string
  offset?: number
  kind?: string
  lockFile?: string
}

export declare class Store {
  /** Opens (creating if needed) the store in directory `dir`. */
  static open(dir: string, options?: OpenOptions): Promise<Store>
  /**
   * Creates a session from its header and events (seq from 0). `exact`: stored as given;
   * otherwise `session/end-seed` is appended unless the seed ends with one. Resolves to the
   * session's length.
   */
  createSession(
    meta: SessionHeader | string,
    events?: readonly EventInput[],
    options?: { exact?: boolean; migrateLegacy?: boolean; batchStart?: boolean },
  ): Promise<number>
  /**
   * Appends a batch whose seqs continue the session, atomically. `migrateLegacy`: events in
   * DSH's pre-identity message shapes are stored as DSH's loader reads them. `batchStart`:
   * the batch is remembered as one writer's batch (`rawJsonl` breaks packed rows there, a zstd
   * export starts a frame there), as DSH's JSONL writer writes each batch.
   */
  appendBatch(id: string, events: readonly EventInput[], options?: { migrateLegacy?: boolean; batchStart?: boolean }): Promise<AppendResult>
  /** Events from `from` (to `to`, exclusive) as JSON lines. */
  readLines(id: string, from?: number, to?: number): Promise<string[]>
  /** Events from `from` (to `to`, exclusive) as fresh objects. */
  read(id: string, from?: number, to?: number): Promise<SessionEvent[]>
  /**
   * The session as its DSH `session.jsonl` text, or `null`: what DSH's JSONL writer writes for
   * the same batches when each was appended with `batchStart` (chunk runs are packed within a
   * batch, as DSH packs them; `pack: false`, DSH's `packChunks: false`, packs none).
   */
  rawJsonl(id: string, options?: { pack?: boolean }): Promise<string | null>
  header(id: string): Promise<SessionHeader>
  /**
   * The sessions in `sort` order (ties by id; default: all, by id), at most `limit` of them;
   * `stored`: in the order the store keeps them (no order promised, nothing sorted).
   */
  list(options?: { sort?: 'id' | 'created' | 'updated' | 'events' | 'stored'; descending?: boolean; limit?: number }): Promise<SessionRow[]>
  /**
   * Every session as DSH's `listSnapshots` returns it — the header without its `type` key
   * and the revision — in no order, built from one parse.
   */
  listSnapshots(): Promise<Array<{ header: Record<string, unknown>; revision: string }>>
  revision(id: string): Promise<string | null>
  /** Closes an interrupted turn and appends the end-seed marker (DSH resume). */
  repair(id: string): Promise<RepairResult>
  fork(id: string, options?: { at?: number; childId?: string }): Promise<string>
  deleteSession(id: string): Promise<void>
  /** Deletes every session last written more than `ageMs` ago; resolves to their ids, oldest first. */
  deleteOlderThan(ageMs: number, options?: { dryRun?: boolean }): Promise<string[]>
  /**
   * Writes the log again without the records no session reads (deleted sessions): afterwards
   * no file of the store holds their events. `dryRun`: only says what would go.
   */
  compact(options?: { dryRun?: boolean }): Promise<CompactResult>
  /** The log's live and dead record bytes (one read of the whole log). */
  space(): Promise<Space>
  /** What the writer's background work (retention, compaction) has done since the open. */
  maintenance(): Maintenance
  /** Resolves to `true` once the background work is idle, `false` after `timeoutMs` (default 60000). */
  waitMaintenance(timeoutMs?: number): Promise<boolean>
  /**
   * Yields the session's events from `from` on as they are appended, until `signal` aborts or
   * the loop is left. Holds no libuv pool thread; a writer in another process is seen every
   * `pollMs` (an integer from 1 to 60000, default 250; else `INVALID_ARGUMENT`).
   */
  subscribe(id: string, from?: number, options?: { signal?: AbortSignal; pollMs?: number }): AsyncGenerator<SessionEvent>
  stats(): Promise<Stats>
  openFacts(): OpenFacts
  sync(): Promise<void>
  close(): Promise<void>
}

/** Turns a native error into a `SessdbError` (exported for wrappers). */
export declare function translate(err: unknown): unknown

/**
 * This machine's platform as the prebuilt addon packages are named (`linux-x64-gnu`,
 * `darwin-arm64`, ...): `@sessdb/node-<platformKey()>` holds its addon.
 */
export declare function platformKey(): string
