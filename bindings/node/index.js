'use strict'
// The sessdb store from Node.js. Loads the native addon (the prebuilt package of this platform,
// or a build from a checkout: `loadAddon`) and wraps it: events go in as objects or JSON lines and come out as JSON lines or objects,
// and every failure is an `Error` with a stable `code` (a refused event: the rule's name, with
// `session` and `seq`; damage: `CORRUPTION` with `segment` and `offset`; `LOCKED`, `NOT_FOUND`,
// `EXISTS`, `POISONED`, `READ_ONLY`, `CLOSED`, `IO`, `INVALID_EVENT`, `INVALID_HEADER`, ...).

const fs = require('node:fs')
const path = require('node:path')

const { platformKey } = require('./platform.js')

/**
 * The addon: `$SESSDB_NODE_ADDON` when set; else `sessdb.<platform>.node` beside this file
 * (what `build.sh` puts there from a checkout); else the prebuilt package of this platform,
 * `@sessdb/node-<platform>`, which npm installs with this one (an optional dependency).
 * Nothing else is looked at, so a stale build is never loaded in its place.
 */
function loadAddon() {
  const key = platformKey()
  const explicit = process.env.SESSDB_NODE_ADDON
  const beside = path.join(__dirname, `sessdb.${key}.node`)
  const pkg = `@sessdb/node-${key}`
  let file = explicit || (fs.existsSync(beside) ? beside : null)
  if (!file) {
    try {
      file = require.resolve(pkg)
    } catch {
      const e = new Error(
        `sessdb: no native addon for this platform (${key}, Node ${process.versions.node}): ` +
          `the prebuilt package ${pkg} is not installed. npm installs it with @sessdb/node ` +
          `when the platform has one (a release builds ${require('./package.json').napi.targets.length} targets: ` +
          `see the package's napi.targets); an install with --omit=optional leaves it out. ` +
          `From a checkout of sessdb, build it instead: bindings/node/build.sh (puts ${path.basename(beside)} beside index.js), ` +
          `or set SESSDB_NODE_ADDON to a built addon.`,
      )
      e.code = 'NO_ADDON'
      throw e
    }
  }
  const m = { exports: {} }
  try {
    process.dlopen(m, file)
  } catch (err) {
    const e = new Error(`sessdb: the native addon ${file} does not load on ${key}: ${err.message}`)
    e.code = 'NO_ADDON'
    e.cause = err
    throw e
  }
  return m.exports
}

const native = loadAddon()

const MARKER = '\u0001'

/** A native error with its facts as an `Error` with `code` and the rest as properties. */
function translate(err) {
  if (!(err instanceof Error) || !err.message.startsWith(MARKER)) return err
  let facts
  try {
    facts = JSON.parse(err.message.slice(1))
  } catch {
    return err
  }
  const out = new Error(facts.message)
  for (const [k, v] of Object.entries(facts)) if (k !== 'message') out[k] = v
  return out
}

async function call(promiseFn) {
  try {
    return await promiseFn()
  } catch (err) {
    throw translate(err)
  }
}

function syncCall(fn) {
  try {
    return fn()
  } catch (err) {
    throw translate(err)
  }
}

/** An `Error` with a stable `code`, as the addon's are. */
function coded(code, message) {
  const e = new Error(message)
  e.code = code
  return e
}

/**
 * A JSON text given as a string must be well-formed UTF-16: a lone surrogate cannot cross
 * into UTF-8 (it would be stored as U+FFFD, silently). `JSON.stringify` escapes them itself.
 */
function wellFormed(text, what) {
  const ok =
    typeof text.isWellFormed === 'function'
      ? text.isWellFormed()
      : !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)
  if (!ok) {
    throw coded(
      what === 'header' ? 'INVALID_HEADER' : 'INVALID_EVENT',
      `the ${what} text holds a lone surrogate (not well-formed UTF-16): escape it as \\uXXXX or pass an object`,
    )
  }
  return text
}

/** One event as a JSON line: a string is taken as it is, an object is serialized once. */
function line(event) {
  return typeof event === 'string' ? wellFormed(event, 'event') : JSON.stringify(event)
}

/**
 * Whether `lines` (of `events`) may cross joined by `\n`, one string for the batch, one
 * crossing into the addon (PERFORMANCE.md): unless a line given as a string holds a raw one
 * (`JSON.stringify` never writes one) — then each line crosses alone and is refused as before.
 */
function joinable(events, lines) {
  for (let i = 0; i < events.length; i++) {
    if (typeof events[i] === 'string' && lines[i].includes('\n')) return false
  }
  return true
}

function header(h) {
  return typeof h === 'string' ? wellFormed(h, 'header') : JSON.stringify(h)
}

/**
 * `value`, a non-negative integer (a seq, a count, milliseconds): a fraction or a number past
 * 2^53 would be cut silently on its way into the addon, so it is refused here.
 */
function whole(value, name) {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw coded('INVALID_ARGUMENT', `${name} must be a non-negative integer, not ${value}`)
  }
  return value
}

/** `whole`, or `undefined` as it is. */
function wholeOrNone(value, name) {
  return value === undefined ? undefined : whole(value, name)
}

/**
 * An options object with only `known` keys (each a nested key set, or `true`): a misspelled
 * key is refused, as the CLI refuses an unknown flag, rather than ignored.
 */
function checked(options, known, what) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw coded('INVALID_ARGUMENT', `${what} must be an object`)
  }
  for (const key of Object.keys(options)) {
    if (!(key in known)) {
      const names = Object.keys(known).join(', ')
      throw coded('INVALID_ARGUMENT', `${what}: unknown option ${JSON.stringify(key)} (known: ${names})`)
    }
    if (known[key] !== true && options[key] !== undefined) checked(options[key], known[key], `${what}.${key}`)
  }
  return options
}

const OPEN_OPTIONS = {
  durability: true,
  readOnly: true,
  compaction: { background: true, deadFraction: true, minDeadBytes: true },
  retention: { maxAgeMs: true, maxLiveBytes: true, checkEveryMs: true },
}

/** An open sessdb store. */
class Store {
  /** @param {object} inner the native store */
  constructor(inner) {
    this.inner = inner
  }

  /**
   * Opens (creating if needed) the store in directory `dir`.
   * @param {string} dir
   * @param {import('./index').OpenOptions} [options]
   */
  static async open(dir, options = {}) {
    if (typeof dir !== 'string') throw coded('INVALID_ARGUMENT', `dir must be a string, not ${typeof dir}`)
    checked(options, OPEN_OPTIONS, 'open options')
    const inner = await call(() => syncCall(() => native.open(dir, options)))
    return new Store(inner)
  }

  createSession(meta, events = [], options = {}) {
    return call(() => {
      const { exact = false, migrateLegacy = false, batchStart = false } = checked(
        options,
        { exact: true, migrateLegacy: true, batchStart: true },
        'createSession options',
      )
      return syncCall(() => {
        const h = header(meta)
        const lines = events.map(line)
        return joinable(events, lines)
          ? this.inner.createSessionLines(h, lines.join('\n'), lines.length, exact, migrateLegacy, batchStart)
          : this.inner.createSession(h, lines, exact, migrateLegacy, batchStart)
      })
    })
  }

  appendBatch(id, events, options = {}) {
    return call(() => {
      const { migrateLegacy = false, batchStart = false } = checked(
        options,
        { migrateLegacy: true, batchStart: true },
        'appendBatch options',
      )
      return syncCall(() => {
        const lines = events.map(line)
        return joinable(events, lines)
          ? this.inner.appendLines(id, lines.join('\n'), lines.length, migrateLegacy, batchStart)
          : this.inner.appendBatch(id, lines, migrateLegacy, batchStart)
      })
    })
  }

  /** Events from `from` (to `to`, exclusive) as JSON lines: one string from the addon, split. */
  async readLines(id, from = 0, to) {
    whole(from, 'from')
    wholeOrNone(to, 'to')
    const text = await call(() => syncCall(() => this.inner.readLines(id, from, to)))
    // A JSON line holds no raw newline (JSON escapes it): the joined lines split back exactly.
    return text === '' ? [] : text.split('\n')
  }

  /**
   * Events from `from` (to `to`, exclusive) as fresh objects: one JSON array, parsed once,
   * whose runs of streamed chunks come packed (`src/packed.rs`) and are expanded here into the
   * objects `JSON.parse` of each event's line gives.
   */
  async read(id, from = 0, to) {
    whole(from, 'from')
    wholeOrNone(to, 'to')
    const rows = JSON.parse(await call(() => syncCall(() => this.inner.readPacked(id, from, to))))
    const out = []
    for (const row of rows) {
      if (!Array.isArray(row)) {
        out.push(row)
        continue
      }
      const [seq0, turn, step, index, type, times, texts] = row
      for (let i = 0; i < texts.length; i++) {
        out.push({
          type: 'assistant/chunk',
          seq: seq0 + i,
          time: times[i],
          data: { turn, step, chunk: { type, index, text: texts[i] } },
        })
      }
    }
    return out
  }

  /** The session as its DSH `session.jsonl` text, or `null`; `pack: false` packs no chunk run. */
  rawJsonl(id, options = {}) {
    return call(() => {
      const { pack = true } = checked(options, { pack: true }, 'rawJsonl options')
      return this.inner.rawJsonl(id, pack)
    })
  }

  async header(id) {
    return JSON.parse(await call(() => this.inner.header(id)))
  }

  /**
   * The sessions, one JSON array from the addon (the headers inside it), parsed once:
   * `{ sort: 'id' | 'created' | 'updated' | 'events', descending, limit }` choose which and in
   * what order (default: all, by id).
   */
  async list(options = {}) {
    const json = await call(() => {
      const { sort, descending = false, limit } = checked(
        options,
        { sort: true, descending: true, limit: true },
        'list options',
      )
      if (sort !== undefined && !['id', 'created', 'updated', 'events', 'stored'].includes(sort)) {
        throw coded('INVALID_ARGUMENT', `list options.sort must be id, created, updated, events or stored, not ${JSON.stringify(sort)}`)
      }
      if (typeof descending !== 'boolean') {
        throw coded('INVALID_ARGUMENT', 'list options.descending must be a boolean')
      }
      return this.inner.list(sort, descending, wholeOrNone(limit, 'list options.limit'))
    })
    // `[[header, events, revision, turn open 0/1], …]` (src/lib.rs).
    const rows = JSON.parse(json)
    const out = new Array(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const [header, events, revision, open] = rows[i]
      out[i] = {
        id: header.id,
        header,
        events,
        parent: header.parentSession ?? null,
        turnOpen: open === 1,
        revision,
      }
    }
    return out
  }

  /**
   * Every session as DSH's `listSnapshots` returns it — `{ header, revision }`, the header
   * without its `type` key — in no order. The addon hands the rows over in pieces while it
   * lists them (`src/snapshots.rs`), so each piece is parsed here while the next is written.
   */
  async listSnapshots() {
    const out = []
    let taken = 0
    let broken = null
    let wake = null
    // Runs on the JS thread once per piece; it must not throw (an exception in a
    // thread-safe function's callback is uncaught), so a failure is kept for below.
    const take = (err, json) => {
      try {
        if (err) throw err
        // `[header, revision, header, revision, …]` (src/snapshots.rs).
        const flat = JSON.parse(json)
        for (let i = 0; i < flat.length; i += 2) {
          const header = flat[i]
          if (header.type !== undefined) delete header.type
          out.push({ header, revision: flat[i + 1] })
        }
      } catch (e) {
        broken ??= translate(e)
      }
      taken++
      const w = wake
      wake = null
      if (w) w()
    }
    const pieces = await call(() => this.inner.listSnapshots(take))
    while (taken < pieces) {
      await new Promise((resolve) => {
        wake = resolve
      })
    }
    if (broken) throw broken
    return out
  }

  revision(id) {
    return call(() => this.inner.revision(id))
  }

  async repair(id) {
    const r = await call(() => this.inner.repair(id))
    return { ...r, endSeed: r.endSeed ?? null }
  }

  fork(id, options = {}) {
    return call(() => {
      const { at, childId } = checked(options, { at: true, childId: true }, 'fork options')
      return syncCall(() => this.inner.fork(id, wholeOrNone(at, 'at'), childId))
    })
  }

  deleteSession(id) {
    return call(() => this.inner.deleteSession(id))
  }

  /** Deletes every session last written more than `ageMs` ago; resolves to their ids. */
  deleteOlderThan(ageMs, options = {}) {
    return call(() => {
      const { dryRun = false } = checked(options, { dryRun: true }, 'deleteOlderThan options')
      return syncCall(() => this.inner.deleteOlderThan(whole(ageMs, 'ageMs'), dryRun))
    })
  }

  /** Writes the log again without the deleted sessions' records (`dryRun`: only says what). */
  compact(options = {}) {
    return call(() => {
      const { dryRun = false } = checked(options, { dryRun: true }, 'compact options')
      return this.inner.compact(dryRun)
    })
  }

  /** Live and dead record bytes of the log (one read of it). */
  space() {
    return call(() => this.inner.space())
  }

  /** What the writer's background work (retention, compaction) has done. */
  maintenance() {
    const m = syncCall(() => this.inner.maintenance())
    return { ...m, lastError: m.lastError ?? null }
  }

  /** Resolves to `true` once the background work is idle, `false` after `timeoutMs`. */
  waitMaintenance(timeoutMs = 60000) {
    return call(() => syncCall(() => this.inner.waitMaintenance(whole(timeoutMs, 'timeoutMs'))))
  }

  /**
   * Follows a session: yields its events (objects) from seq `from` on as they are appended,
   * until `signal` aborts or the loop is left. Holds no libuv pool thread: a thread of its
   * own waits on the store's notification (an append in this process wakes it at once; a
   * writer in another process is seen every `pollMs`, 1 to 60000) and hands batches over.
   */
  async *subscribe(id, from = 0, options = {}) {
    const { signal, pollMs = 250 } = checked(options, { signal: true, pollMs: true }, 'subscribe options')
    whole(from, 'from')
    if (!Number.isInteger(pollMs) || pollMs < 1 || pollMs > 60000) {
      throw coded('INVALID_ARGUMENT', `pollMs must be an integer from 1 to 60000, not ${pollMs}`)
    }
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw coded('INVALID_ARGUMENT', 'signal must be an AbortSignal')
    }
    if (signal?.aborted) return
    let batch = []
    let at = 0
    let failure = null
    let wake = null
    const rouse = () => {
      const w = wake
      wake = null
      if (w) w()
    }
    const follower = syncCall(() =>
      this.inner.follow(id, from, pollMs, (err, lines) => {
        // An error leaves the batch as it is: the events not yet yielded come first, then the
        // error, and none of them twice.
        if (err) failure = translate(err)
        else {
          batch = batch.slice(at).concat(lines)
          at = 0
        }
        rouse()
      }),
    )
    const onAbort = () => {
      follower.close()
      rouse()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal?.aborted) {
        if (at < batch.length) {
          const l = batch[at++]
          // The whole batch taken: the next may come while this event is handled.
          if (at === batch.length) follower.ack()
          yield JSON.parse(l)
          continue
        }
        if (failure) throw failure
        await new Promise((resolve) => {
          wake = resolve
        })
      }
    } finally {
      signal?.removeEventListener('abort', onAbort)
      follower.close()
    }
  }

  stats() {
    return call(() => this.inner.stats())
  }

  openFacts() {
    const f = syncCall(() => this.inner.openFacts())
    return { ...f, checkpoint: f.checkpoint ?? null }
  }

  sync() {
    return call(() => this.inner.sync())
  }

  close() {
    return call(() => this.inner.close())
  }
}

module.exports = { Store, translate, platformKey }
