/**
 * Sessions whose content sessdb refuses, kept verbatim beside the store. DSH's backends store
 * whatever a batch holds and validate when a session is loaded; sessdb validates every event
 * when it is written and never stores what its acceptance function refuses. So when an append
 * holds content sessdb refuses (an event DSH's loader would refuse too, or a header of another
 * format version), the session — its stored events and that batch — moves here, as the DSH
 * `session.jsonl` text DSH's JSONL backend would have written, and every later write of it
 * goes here: nothing a DSH caller appended is lost, the sessdb store holds only what it
 * validated, and DSH's coordinator refuses the session at load exactly as it refuses it from
 * its own backends. A live DSH session never gets here: DSH's `Session` validates each event
 * with the same rules before it reaches persistence.
 * @module @sessdb/dsh-session-persistence/refused
 */

import { appendFile, mkdir, open, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { SessionEvent, SessionHeader } from '@deepseek-ai/dsh-session'

/** The codes of sessdb refusals that concern content, not the log's structure or I/O. */
const CONTENT_CODES = new Set(['INVALID_HEADER', 'INVALID_EVENT', 'INVALID_TYPE', 'UNSUPPORTED_FORMAT'])

/**
 * Whether sessdb refused `error`'s batch for its content (a rule of its acceptance function
 * or the header), and not for its seqs, which DSH's backends refuse at write too.
 * @param error - a rejection of the sessdb binding.
 * @returns whether the batch belongs in the refused sessions.
 */
export function refusedForContent(error: unknown): boolean {
  const e = error as { code?: string, rule?: string } | undefined
  if (e?.rule !== undefined) return e.rule !== 'seq-contiguity'
  return e?.code !== undefined && CONTENT_CODES.has(e.code)
}

/** One refused session as read back. */
export interface RefusedSession {
  header: Record<string, unknown>
  events: SessionEvent[]
  revision: string
  /** The file's text: DSH's `session.jsonl` of the session. */
  text: string
}

/** Hex of the id's UTF-16 code units: a file name for any id, one per id. */
function fileOf(dir: string, id: string): string {
  let hex = ''
  for (let i = 0; i < id.length; i++) hex += id.charCodeAt(i).toString(16).padStart(4, '0')
  return join(dir, `${hex}.jsonl`)
}

/** The ids a file name stands for (`fileOf` reversed). */
function idOf(name: string): string {
  const hex = name.slice(0, -'.jsonl'.length)
  let id = ''
  for (let i = 0; i < hex.length; i += 4) id += String.fromCharCode(parseInt(hex.slice(i, i + 4), 16))
  return id
}

/** The refused sessions of one store: `<store>/dsh-refused/`. */
export class RefusedSessions {
  private readonly dir: string
  /**
   * The refused ids, listed once: this backend holds the store's writer lock, so no other
   * process adds any, and no append or load asks the file system.
   */
  private listed?: Promise<Set<string>>

  constructor(store: string) {
    this.dir = join(store, 'dsh-refused')
  }

  private known(): Promise<Set<string>> {
    this.listed ??= readdir(this.dir).then(
      names => new Set(names.filter(n => n.endsWith('.jsonl')).map(idOf)),
      () => new Set<string>(),
    )
    return this.listed
  }

  /**
   * Starts (or replaces) a refused session: its header line and events as DSH writes them.
   * @param meta - the session header.
   * @param events - every event it holds, seq from 0.
   */
  async start(meta: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    const lines = [JSON.stringify({ type: 'session', ...meta }), ...events.map(e => JSON.stringify(e))]
    // Whole or not at all: written beside, synced, renamed, the directory synced. A crash
    // leaves no file or the whole one (and perhaps a `.tmp`, never listed).
    const file = fileOf(this.dir, meta.id)
    await writeFile(`${file}.tmp`, lines.map(l => `${l}\n`).join(''), { flush: true })
    await rename(`${file}.tmp`, file)
    const dir = await open(this.dir, 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
    ;(await this.known()).add(meta.id)
  }

  /**
   * The refused ids.
   * @returns them, in no order.
   */
  async ids(): Promise<string[]> {
    return [...(await this.known())]
  }

  /**
   * Appends events to a refused session.
   * @param id - the session id.
   * @param events - the events, whose seqs continue it.
   */
  async append(id: string, events: readonly SessionEvent[]): Promise<void> {
    await appendFile(fileOf(this.dir, id), events.map(e => `${JSON.stringify(e)}\n`).join(''), { flush: true })
  }

  /**
   * Whether `id` is a refused session.
   * @param id - the session id.
   * @returns whether it is one.
   */
  async has(id: string): Promise<boolean> {
    return (await this.known()).has(id)
  }

  /**
   * Reads a refused session back.
   * @param id - the session id.
   * @returns its header, events and revision, or `undefined`.
   */
  async read(id: string): Promise<RefusedSession | undefined> {
    if (!(await this.has(id))) return undefined
    const path = fileOf(this.dir, id)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch {
      return undefined
    }
    const info = await stat(path)
    const lines = text.split('\n').filter(l => l.length > 0)
    const header = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>
    const events = lines.slice(1).map(l => JSON.parse(l) as SessionEvent)
    return { header, events, revision: `refused:${path}#${info.size}:${info.mtimeMs}`, text }
  }

  /**
   * Every refused session, by id.
   * @returns them, read back.
   */
  async all(): Promise<RefusedSession[]> {
    const out: RefusedSession[] = []
    for (const id of [...(await this.known())].sort()) {
      const session = await this.read(id)
      if (session !== undefined) out.push(session)
    }
    return out
  }
}
