'use strict'
// The sessdb store from Node.js. Loads the native addon (built by `cargo build -p sessdb-node`)
// and wraps it: events go in as objects or JSON lines and come out as JSON lines or objects,
// and every failure is an `Error` with a stable `code` (a refused event: the rule's name, with
// `session` and `seq`; damage: `CORRUPTION` with `segment` and `offset`; `LOCKED`, `NOT_FOUND`,
// `EXISTS`, `POISONED`, `READ_ONLY`, `CLOSED`, `IO`, `INVALID_EVENT`, `INVALID_HEADER`, ...).

const fs = require('node:fs')
const path = require('node:path')

/** Where the addon is: $SESSDB_NODE_ADDON, `sessdb.node` beside this file, or the build. */
function addonPath() {
  const candidates = [
    process.env.SESSDB_NODE_ADDON,
    path.join(__dirname, 'sessdb.node'),
    path.join(__dirname, '..', '..', 'target', 'release', 'libsessdb_node.so'),
    path.join(__dirname, '..', '..', 'target', 'debug', 'libsessdb_node.so'),
  ].filter(Boolean)
  const found = candidates.find((p) => fs.existsSync(p))
  if (!found) {
    throw new Error(
      `sessdb: no native addon found (looked at ${candidates.join(', ')}); ` +
        'build it with `cargo build --release -p sessdb-node`',
    )
  }
  return found
}

const native = (() => {
  const m = { exports: {} }
  process.dlopen(m, addonPath())
  return m.exports
})()

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

/** One event as a JSON line: a string is taken as it is, an object is serialized once. */
function line(event) {
  return typeof event === 'string' ? event : JSON.stringify(event)
}

function header(h) {
  return typeof h === 'string' ? h : JSON.stringify(h)
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
   * @param {{durability?: 'buffered' | 'sync', readOnly?: boolean}} [options]
   */
  static async open(dir, options = {}) {
    const inner = await call(() => syncCall(() => native.open(dir, options)))
    return new Store(inner)
  }

  createSession(meta, events = [], { exact = false, migrateLegacy = false } = {}) {
    return call(() =>
      syncCall(() => this.inner.createSession(header(meta), events.map(line), exact, migrateLegacy)),
    )
  }

  appendBatch(id, events, { migrateLegacy = false } = {}) {
    return call(() => syncCall(() => this.inner.appendBatch(id, events.map(line), migrateLegacy)))
  }

  /** Events from `from` (to `to`, exclusive) as JSON lines. */
  readLines(id, from = 0, to) {
    return call(() => syncCall(() => this.inner.readFrom(id, from, to)))
  }

  /** Events from `from` (to `to`, exclusive) as fresh objects. */
  async read(id, from = 0, to) {
    return (await this.readLines(id, from, to)).map((l) => JSON.parse(l))
  }

  /** The session as its DSH `session.jsonl` text, or `null`. */
  rawJsonl(id) {
    return call(() => this.inner.rawJsonl(id))
  }

  async header(id) {
    return JSON.parse(await call(() => this.inner.header(id)))
  }

  async list() {
    return (await call(() => this.inner.list())).map((r) => ({ ...r, header: JSON.parse(r.header) }))
  }

  revision(id) {
    return call(() => this.inner.revision(id))
  }

  repair(id) {
    return call(() => this.inner.repair(id))
  }

  fork(id, { at, childId } = {}) {
    return call(() => syncCall(() => this.inner.fork(id, at, childId)))
  }

  deleteSession(id) {
    return call(() => this.inner.deleteSession(id))
  }

  /**
   * Follows a session: yields its events (objects) from seq `from` on as they are appended,
   * until `signal` aborts.
   */
  async *subscribe(id, from = 0, { signal, pollMs = 250 } = {}) {
    let next = from
    while (!signal?.aborted) {
      const lines = await call(() => syncCall(() => this.inner.waitEvents(id, next, pollMs)))
      for (const l of lines) {
        next += 1
        yield JSON.parse(l)
      }
    }
  }

  stats() {
    return call(() => this.inner.stats())
  }

  openFacts() {
    return syncCall(() => this.inner.openFacts())
  }

  sync() {
    return call(() => this.inner.sync())
  }

  close() {
    return call(() => this.inner.close())
  }
}

module.exports = { Store, translate }
