'use strict'
// The binding's own tests, with Node's built-in runner (`node --test`): no npm dependency.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Store } = require('..')

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'sessdb-node-'))
}

const header = (id) => ({ type: 'session', version: 0, id, createdAt: 1000, cwd: '/w', delegationDepth: 0 })
const turnStart = (seq, turn) => ({ type: 'turn/start', seq, time: 1000 + seq, data: { turn } })
const turnEnd = (seq, turn) => ({
  type: 'turn/end',
  seq,
  time: 1000 + seq,
  data: { turn, reason: { kind: 'completed' } },
})
const user = (seq, id, text) => ({
  type: 'user/message',
  seq,
  time: 1000 + seq,
  data: { id, role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] },
  surfaceOp: 'append',
})

test('a session round-trips: created exactly, appended, read back as lines and objects', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  assert.equal(await store.createSession(header('s1'), [turnStart(0, 1)], { exact: true }), 1)
  const range = await store.appendBatch('s1', [user(1, 'u1', 'hi'), JSON.stringify(turnEnd(2, 1))])
  assert.deepEqual(range, { from: 1, to: 3 })
  const lines = await store.readLines('s1', 1)
  assert.equal(lines.length, 2)
  assert.deepEqual(JSON.parse(lines[0]), user(1, 'u1', 'hi'))
  const events = await store.read('s1')
  assert.deepEqual(events, [turnStart(0, 1), user(1, 'u1', 'hi'), turnEnd(2, 1)])
  assert.equal(events[0] === (await store.read('s1'))[0], false, 'every read gives fresh objects')
  assert.deepEqual(await store.header('s1'), header('s1'))
  await store.close()
  // Reopened in another open: the same events.
  const again = await Store.open(dir, { durability: 'sync' })
  assert.deepEqual(await again.read('s1'), events)
  await again.close()
})

test('a buffered append is written on the calling thread when nothing waits; a sync one on the pool', async () => {
  const lines = (from) => [JSON.stringify(user(from, `u${from}`, 'hi')), JSON.stringify(turnEnd(from + 1, 1))]
  const stores = {}
  for (const durability of ['buffered', 'sync']) {
    const store = await Store.open(tempDir(), { durability })
    await store.createSession(header('s'), [turnStart(0, 1)], { exact: true })
    // The addon's own call: a plain result when written at once, a Promise from the pool.
    const out = store.inner.appendBatch('s', lines(1), false, false)
    assert.equal(typeof out.then, durability === 'sync' ? 'function' : 'undefined', durability)
    assert.deepEqual(await out, { from: 1, to: 3 })
    // Through the public call the same either way: a Promise of the seqs taken.
    const next = store.appendBatch('s', [JSON.stringify(turnStart(3, 2))])
    assert.equal(typeof next.then, 'function')
    assert.deepEqual(await next, { from: 3, to: 4 })
    // A refusal at once is a rejection, as from the pool.
    await assert.rejects(store.appendBatch('s', [JSON.stringify(turnStart(9, 3))]), { code: 'seq-contiguity', seq: 9 })
    stores[durability] = store
  }
  assert.deepEqual(await stores.buffered.read('s'), await stores.sync.read('s'))
  for (const store of Object.values(stores)) await store.close()
})

test('a batch crosses as one string unless a line given as a string holds a raw newline', async () => {
  const store = await Store.open(tempDir(), { durability: 'buffered' })
  const calls = []
  for (const way of ['appendLines', 'appendBatch', 'createSessionLines', 'createSession']) {
    const native = store.inner[way].bind(store.inner)
    store.inner[way] = (...args) => (calls.push(way), native(...args))
  }
  assert.equal(await store.createSession(header('n'), [turnStart(0, 1)], { exact: true }), 1)
  await assert.rejects(
    store.createSession(header('m'), ['{"type":"turn/start",\n"seq":0,"time":1,"data":{"turn":1}}'], { exact: true }),
    { code: 'INVALID_EVENT', message: /raw line break between tokens/ },
  )
  assert.deepEqual(calls.splice(0), ['createSessionLines', 'createSession'])
  // Objects, and strings without a newline: one string, the lines joined.
  await store.appendBatch('n', [user(1, 'u1', 'a\nb'), JSON.stringify(turnEnd(2, 1))])
  // A line given as a string holding a raw newline: its own string, refused as before (a
  // JSONL line holds none; joined, it would be read as two lines).
  await assert.rejects(
    store.appendBatch('n', [JSON.stringify(turnStart(3, 2)), '{"type":"turn/end",\n"seq":4,"time":1004,"data":{}}']),
    { code: 'INVALID_EVENT', message: /raw line break between tokens/ },
  )
  await store.appendBatch('n', [turnStart(3, 2)])
  // An empty batch: nothing appended, nothing refused.
  await store.appendBatch('n', [])
  assert.deepEqual(calls, ['appendLines', 'appendBatch', 'appendLines', 'appendLines'])
  assert.deepEqual(await store.read('n'), [turnStart(0, 1), user(1, 'u1', 'a\nb'), turnEnd(2, 1), turnStart(3, 2)])
  // The addon holds the count to the lines it is given: a mismatch appends nothing.
  assert.throws(() => store.inner.appendLines('n', JSON.stringify(turnEnd(4, 2)), 2, false, false), /2 events were announced and 1 lines came/)
  assert.throws(() => store.inner.appendLines('n', JSON.stringify(turnEnd(4, 2)), 0, false, false), /0 events were announced/)
  // A count past what the text can hold is refused too, with no room made for it first.
  assert.throws(() => store.inner.appendLines('n', JSON.stringify(turnEnd(4, 2)), 2 ** 32 - 1, false, false), /4294967295 events were announced and 1 lines came/)
  assert.equal((await store.read('n')).length, 4)
  await store.close()
})

test('revisions change with every append and repair and stay equal otherwise', async () => {
  const store = await Store.open(tempDir())
  assert.equal(await store.revision('nope'), null)
  await store.createSession(header('r'), [turnStart(0, 1)], { exact: true })
  const r1 = await store.revision('r')
  assert.equal(await store.revision('r'), r1)
  await store.appendBatch('r', [user(1, 'u1', 'x')])
  const r2 = await store.revision('r')
  assert.notEqual(r2, r1)
  // The turn is open: repair closes it and appends the end-seed marker.
  const rows = await store.list()
  assert.equal(rows.length, 1)
  assert.equal(rows[0].turnOpen, true)
  assert.equal(rows[0].revision, r2)
  const repaired = await store.repair('r')
  assert.ok(repaired.closers.length > 0, JSON.stringify(repaired))
  assert.notEqual(await store.revision('r'), r2)
  assert.equal((await store.list())[0].turnOpen, false)
  // A session deleted and created again under the same id has another revision.
  const before = await store.revision('r')
  await store.deleteSession('r')
  await store.createSession(header('r'), [turnStart(0, 1)], { exact: true })
  assert.notEqual(await store.revision('r'), before)
  await store.close()
})

test('errors carry a stable code and their facts', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('e'), [], { exact: true })
  // A user message without surfaceOp: refused by its rule, naming session and seq.
  const bad = { ...user(0, 'u', 'x') }
  delete bad.surfaceOp
  await assert.rejects(store.appendBatch('e', [bad]), (err) => {
    assert.equal(err.code, 'surface-op-required')
    assert.equal(err.rule, 'surface-op-required')
    assert.equal(err.session, 'e')
    assert.equal(err.seq, 0)
    assert.match(err.message, /surface-op-required/)
    return true
  })
  await assert.rejects(store.read('none'), { code: 'NOT_FOUND', session: 'none' })
  await assert.rejects(store.createSession(header('e'), []), { code: 'EXISTS' })
  await assert.rejects(store.appendBatch('e', ['{not json']), { code: 'INVALID_EVENT' })
  await assert.rejects(Store.open(dir), { code: 'LOCKED' })
  await assert.rejects(Store.open(dir, { durability: 'sometimes' }), { code: 'INVALID_ARGUMENT' })
  // A reader opens beside the writer and sees what it wrote.
  await store.appendBatch('e', [turnStart(0, 1)])
  const reader = await Store.open(dir, { readOnly: true })
  assert.equal((await reader.read('e')).length, 1)
  await assert.rejects(reader.appendBatch('e', [turnEnd(1, 1)]), { code: 'READ_ONLY' })
  await store.close()
  await assert.rejects(store.appendBatch('e', [turnEnd(1, 1)]), { code: 'CLOSED' })
})

test('damage is CORRUPTION with its segment and offset', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('c'), [turnStart(0, 1)], { exact: true })
  for (let i = 1; i < 40; i++) await store.appendBatch('c', [user(i, `u${i}`, 'some text '.repeat(10))])
  await store.close()
  const seg = path.join(dir, 'segments', '00000000000000000000.seg')
  const bytes = fs.readFileSync(seg)
  // A byte of an event's data in the middle of the log.
  let at = -1
  for (let i = 0; i < 20; i++) at = bytes.indexOf('some text', at + 1)
  assert.ok(at > 0)
  bytes[at] ^= 0x55
  fs.writeFileSync(seg, bytes)
  // The checkpoint covers the log: open works, the read that touches the damage refuses.
  const again = await Store.open(dir)
  await assert.rejects(again.read('c'), (err) => {
    assert.equal(err.code, 'CORRUPTION')
    assert.equal(err.segment, 'segments/00000000000000000000.seg')
    assert.equal(typeof err.offset, 'number')
    return true
  })
  await again.close()
})

test('fork, subscribe beside a writer, stats', async () => {
  const dir = tempDir()
  const store = await Store.open(dir, { durability: 'sync' })
  await store.createSession(header('p'), [turnStart(0, 1), user(1, 'u1', 'a'), turnEnd(2, 1)], {
    exact: true,
  })
  const child = await store.fork('p', { at: 2, childId: 'kid' })
  assert.equal(child, 'kid')
  assert.equal((await store.read('kid')).length, 4, 'three inherited and the end-seed marker')
  await assert.rejects(store.fork('p', { at: 0 }), { code: 'OPEN_TURN' })
  const reader = await Store.open(dir, { readOnly: true })
  const ac = new AbortController()
  const seen = []
  const follow = (async () => {
    for await (const e of reader.subscribe('p', 3, { signal: ac.signal, pollMs: 50 })) {
      seen.push(e.seq)
      if (seen.length === 2) ac.abort()
    }
  })()
  await store.appendBatch('p', [turnStart(3, 2)])
  await store.appendBatch('p', [turnEnd(4, 2)])
  await follow
  assert.deepEqual(seen, [3, 4])
  const stats = await store.stats()
  assert.equal(stats.sessions, 2)
  assert.ok(stats.events >= 9)
  assert.equal(typeof store.openFacts().recordsReplayed, 'number')
  await store.close()
})

// Before: each subscriber held one of libuv's four pool threads while it waited, so with six
// an append and `fs.readFile` waited for their polls (pollMs each). Now six subscribers that
// poll once a minute hold none: the append, the file read and every subscriber's wake-up (by
// the store's own notification) come at once. The 30 s guard only turns the old hang into a
// failure.
test('subscribers hold no pool thread and wake on the append itself', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('w'), [turnStart(0, 1)], { exact: true })
  const ac = new AbortController()
  const firsts = []
  for (let i = 0; i < 6; i++) {
    firsts.push(
      (async () => {
        for await (const e of store.subscribe('w', 1, { signal: ac.signal, pollMs: 60000 })) return e.seq
      })(),
    )
  }
  let timer
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('stalled behind the subscribers')), 30000)
  })
  try {
    await Promise.race([fs.promises.readFile(__filename), guard])
    await Promise.race([store.appendBatch('w', [turnEnd(1, 1)]), guard])
    assert.deepEqual(await Promise.race([Promise.all(firsts), guard]), [1, 1, 1, 1, 1, 1])
  } finally {
    clearTimeout(timer)
    ac.abort()
  }
  await store.close()
})

// Before: `pollMs: -5` wrapped to about 49 days and the abort signal was not seen meanwhile.
test('bad subscribe options are refused, and an abort ends a waiting subscriber', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('a'), [turnStart(0, 1)], { exact: true })
  for (const pollMs of [-5, 0, 1.5, 60001, '10']) {
    await assert.rejects(
      (async () => {
        for await (const _ of store.subscribe('a', 0, { pollMs })) break
      })(),
      { code: 'INVALID_ARGUMENT' },
      String(pollMs),
    )
  }
  const ac = new AbortController()
  const seen = []
  const waiting = (async () => {
    for await (const e of store.subscribe('a', 0, { signal: ac.signal, pollMs: 60000 })) {
      seen.push(e.seq)
      ac.abort()
    }
  })()
  await waiting
  assert.deepEqual(seen, [0])
  // A subscriber of a missing session is told so.
  await assert.rejects(
    (async () => {
      for await (const _ of store.subscribe('nobody', 0)) break
    })(),
    { code: 'NOT_FOUND' },
  )
  await store.close()
})

// Before: an error that ended a subscription (the store closed, the session deleted) made the
// loop yield the last batch again before it threw: every event twice, then the error.
test('a subscription that ends with an error yields each event once, then the error', async () => {
  for (const from of [0, 1]) {
    const store = await Store.open(tempDir())
    await store.createSession(header('x'), [turnStart(0, 1), user(1, 'u1', 'a'), user(2, 'u2', 'b')], {
      exact: true,
    })
    const seen = []
    await assert.rejects(
      (async () => {
        for await (const e of store.subscribe('x', from, { pollMs: 20 })) {
          seen.push(e.seq)
          if (e.seq === 2) await store.close()
        }
      })(),
      { code: 'CLOSED' },
    )
    assert.deepEqual(seen, from === 0 ? [0, 1, 2] : [1, 2])
  }
  const store = await Store.open(tempDir())
  await store.createSession(header('x'), [turnStart(0, 1)], { exact: true })
  const seen = []
  await assert.rejects(
    (async () => {
      for await (const e of store.subscribe('x', 0, { pollMs: 20 })) {
        seen.push(e.seq)
        await store.deleteSession('x')
      }
    })(),
    { code: 'NOT_FOUND' },
  )
  assert.deepEqual(seen, [0])
  await store.close()
})

// Before: a JSON line given as a string with a lone surrogate was stored with U+FFFD in its
// place, and nothing said so.
test('a JSON text with a lone surrogate is refused, not changed', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('u'), [turnStart(0, 1)], { exact: true })
  const lone = `{"type":"user/message","seq":1,"time":1001,"data":{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"a\ud800b"}]},"surfaceOp":"append"}`
  await assert.rejects(store.appendBatch('u', [lone]), { code: 'INVALID_EVENT' })
  // As an object, JSON.stringify escapes it: stored exactly.
  const ev = user(1, 'u1', 'a\ud800b')
  await store.appendBatch('u', [ev])
  assert.equal((await store.read('u', 1))[0].data.content[0].text, 'a\ud800b')
  assert.equal((await store.readLines('u', 1))[0].includes('\\ud800'), true)
  await store.close()
})

// Before: `index.d.ts` left out codes the addon emits (`UNSUPPORTED_FORMAT`, `FORMAT`,
// `ERROR`). Every fixed code the addon's error module or `index.js` can emit is declared,
// and every declared one is emitted somewhere.
test('index.d.ts declares exactly the fixed error codes the binding emits', () => {
  const rust = fs.readFileSync(path.join(__dirname, '..', 'src', 'error.rs'), 'utf8')
  const js = fs.readFileSync(path.join(__dirname, '..', 'index.js'), 'utf8')
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const emitted = new Set([
    ...[...rust.matchAll(/"([A-Z][A-Z_]+)"/g)].map((m) => m[1]),
    ...[...js.matchAll(/coded\('([A-Z][A-Z_]+)'/g)].map((m) => m[1]),
    ...[...js.matchAll(/'(INVALID_[A-Z]+)'/g)].map((m) => m[1]),
    ...[...js.matchAll(/\.code = '([A-Z][A-Z_]+)'/g)].map((m) => m[1]),
  ])
  const union = dts.slice(dts.indexOf('export type SessdbErrorCode'), dts.indexOf('/**', dts.indexOf('export type SessdbErrorCode')))
  const declared = new Set([...union.matchAll(/'([A-Z][A-Z_]+)'/g)].map((m) => m[1]))
  assert.ok(emitted.size >= 15, [...emitted].join(' '))
  assert.deepEqual([...emitted].sort(), [...declared].sort())
})

// Before: a read-only open of a path that does not exist returned an empty store.
test('a read-only open of no store is NOT_FOUND', async () => {
  const dir = tempDir()
  await assert.rejects(Store.open(path.join(dir, 'typo'), { readOnly: true }), { code: 'NOT_FOUND' })
  await assert.rejects(Store.open(dir, { readOnly: true }), { code: 'NOT_FOUND' })
  assert.equal(fs.existsSync(path.join(dir, 'typo')), false)
})

// Before: the README's example did not run (it mixed `require` with top-level `await`). Its
// block runs here as it stands, from a checkout-like directory in a temp dir.
test("the README's example runs", () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8')
  const block = readme.split('```js\n')[1].split('```')[0]
  const dir = tempDir()
  const program = block.replace("require('@sessdb/node')", `require(${JSON.stringify(path.join(__dirname, '..'))})`)
  fs.writeFileSync(path.join(dir, 'example.js'), program)
  const { execFileSync } = require('node:child_process')
  const out = execFileSync(process.execPath, ['example.js'], { cwd: dir, encoding: 'utf8' })
  assert.match(out, /^2 sessdb:/)
})

// Before: `list()` left out `parent` for a root session and `openFacts()` left out
// `checkpoint` (both declared `… | null`), and `Store.open(42)` rejected with a code of
// N-API's (`StringExpected`). Every returned object has exactly the keys `index.d.ts` declares.
test('results have the shapes index.d.ts declares', async () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const keys = (name) => {
    const body = dts.split(`export interface ${name} {`)[1].split('\n}')[0]
    return [...body.matchAll(/^\s+(\w+)\??:/gm)].map((m) => m[1]).sort()
  }
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('root'), [turnStart(0, 1), user(1, 'u1', 'a')], { exact: true })
  await store.fork('root', { at: 1, childId: 'kid' }).catch(() => {})
  const rows = await store.list()
  for (const r of rows) assert.deepEqual(Object.keys(r).sort(), keys('SessionRow'), r.id)
  assert.equal(rows.find((r) => r.id === 'root').parent, null)
  assert.deepEqual(Object.keys(store.openFacts()).sort(), keys('OpenFacts'))
  assert.equal(store.openFacts().checkpoint, null)
  assert.deepEqual(Object.keys(await store.stats()).sort(), keys('Stats'))
  const range = await store.appendBatch('root', [turnEnd(2, 1)])
  assert.deepEqual(Object.keys(range).sort(), keys('AppendResult'))
  const repaired = await store.repair('root')
  assert.deepEqual(Object.keys(repaired).sort(), keys('RepairResult'))
  await store.close()
  await assert.rejects(Store.open(42), { code: 'INVALID_ARGUMENT' })
})

// Before: after `close()` appends said CLOSED while `read` and `list` went on. One rule now.
test('after close every call is CLOSED', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  await store.createSession(header('c'), [turnStart(0, 1)], { exact: true })
  await store.close()
  // Before: `sync()` and a second `close()` resolved while every other call rejected.
  for (const call of [() => store.read('c'), () => store.list(), () => store.stats(), () => store.revision('c'), () => store.appendBatch('c', [turnEnd(1, 1)]), () => store.sync(), () => store.close()]) {
    await assert.rejects(call(), { code: 'CLOSED' }, String(call))
  }
})

// Before: `read(id, 1.5)` read from seq 1, and a misspelled option key (`{ dryrun: true }`)
// was ignored: the call did what was not asked. Both are refused now, naming what is wrong.
test('fractional numbers and unknown option keys are refused, not cut or ignored', async () => {
  const dir = tempDir()
  await assert.rejects(Store.open(dir, { readonly: true }), { code: 'INVALID_ARGUMENT', message: /readonly/ })
  await assert.rejects(Store.open(dir, { compaction: { deadFration: 0.5 } }), { code: 'INVALID_ARGUMENT' })
  const store = await Store.open(dir)
  await store.createSession(header('n'), [turnStart(0, 1), user(1, 'u1', 'a'), user(2, 'u2', 'b')], { exact: true })
  for (const call of [
    () => store.read('n', 1.5),
    () => store.read('n', 0, 2.5),
    () => store.readLines('n', 1.5),
    () => store.read('n', -1),
    () => store.read('n', 2 ** 60),
    () => store.fork('n', { at: 0.5 }),
    () => store.deleteOlderThan(1.5),
    () => store.waitMaintenance(0.5),
    () => store.compact({ dryrun: true }),
    () => store.deleteOlderThan(1000, { dry_run: true }),
    () => store.appendBatch('n', [user(3, 'u3', 'c')], { batchstart: true }),
    () => store.createSession(header('m'), [], { Exact: true }),
    () => store.rawJsonl('n', { packed: false }),
  ]) {
    await assert.rejects(call(), { code: 'INVALID_ARGUMENT' }, String(call))
  }
  await assert.rejects(
    (async () => {
      for await (const _ of store.subscribe('n', 0, { poll: 5 })) break
    })(),
    { code: 'INVALID_ARGUMENT' },
  )
  // Nothing of it happened: the session is as it was.
  assert.deepEqual((await store.read('n')).map((e) => e.seq), [0, 1, 2])
  assert.deepEqual((await store.read('n', 1, 2)).map((e) => e.seq), [1])
  await store.close()
})

test('compaction, retention and space: a deleted session leaves no byte, old sessions go', async () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const keys = (name) => {
    const body = dts.split(`export interface ${name} {`)[1].split('\n}')[0]
    return [...body.matchAll(/^\s+(\w+)\??:/gm)].map((m) => m[1]).sort()
  }
  const dir = tempDir()
  let store = await Store.open(dir, { compaction: { background: false } })
  const secret = 'secret-of-gone-' + 'x'.repeat(64)
  await store.createSession(header('gone'), [turnStart(0, 1), user(1, 'u1', secret)], { exact: true })
  await store.createSession(header('keep'), [turnStart(0, 1), user(1, 'u1', 'kept')], { exact: true })
  await store.deleteSession('gone')
  const before = await store.space()
  assert.deepEqual(Object.keys(before).sort(), keys('Space'))
  assert.ok(before.deadBytes > 0 && before.liveBytes > 0, JSON.stringify(before))
  const plan = await store.compact({ dryRun: true })
  assert.deepEqual(Object.keys(plan).sort(), keys('CompactResult'))
  assert.equal(plan.dryRun, true)
  assert.equal(plan.sessionsErased, 1)
  const done = await store.compact()
  assert.equal(done.sessionsErased, 1)
  assert.equal(done.sessionsKept, 0)
  assert.ok(done.reclaimedBytes > 0)
  const after = await store.space()
  assert.equal(after.deadBytes, 0)
  // The erased session's records left tombstones: 12 bytes each, in the tables.
  assert.ok(before.tableBytes === 0 && after.tableBytes >= 12, JSON.stringify(after))
  const inFiles = (text) =>
    ['segments', 'checkpoints'].some((d) =>
      fs.readdirSync(path.join(dir, d)).some((f) => fs.readFileSync(path.join(dir, d, f)).includes(text)),
    )
  assert.ok(!inFiles(secret), 'the deleted session is still in the files')
  assert.ok(inFiles('kept'))
  // The events were written in 1970: an hour is old enough.
  assert.deepEqual(await store.deleteOlderThan(3600000, { dryRun: true }), ['keep'])
  assert.equal((await store.list()).length, 1)
  await store.close()
  await assert.rejects(Store.open(dir, { compaction: { deadFraction: 2 } }), { code: 'INVALID_ARGUMENT' })
  await assert.rejects(Store.open(dir, { retention: { maxAgeMs: -1 } }), { code: 'INVALID_ARGUMENT' })
  // A retention policy is applied by the writer at open, on its own thread.
  store = await Store.open(dir, { retention: { maxAgeMs: 3600000 } })
  assert.equal(await store.waitMaintenance(60000), true)
  const m = store.maintenance()
  assert.deepEqual(Object.keys(m).sort(), keys('Maintenance'))
  assert.equal(m.sessionsExpired, 1, JSON.stringify(m))
  assert.equal(m.lastError, null)
  assert.deepEqual(await store.list(), [])
  await store.close()
})

// Installed with `--omit=optional` (or on a platform no prebuilt package covers), the
// `require` fails with NO_ADDON naming the platform, the package to install, and the build
// from a checkout — never a stale build found somewhere else.
test('no addon for the platform: NO_ADDON names the platform and what to do', () => {
  const { spawnSync } = require('node:child_process')
  const dir = tempDir()
  // The package's own files, as npm installs them (no addon beside them).
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'))
  for (const f of [...pkg.files.filter((f) => f.endsWith('.js')), 'package.json']) {
    fs.copyFileSync(path.join(__dirname, '..', f), path.join(dir, f))
  }
  const env = { ...process.env }
  delete env.SESSDB_NODE_ADDON
  const script = "try { require('./index.js') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }"
  const r = spawnSync(process.execPath, ['-e', script], { cwd: dir, env, encoding: 'utf8' })
  const { platformKey } = require('..')
  const out = JSON.parse(r.stdout)
  assert.equal(out.code, 'NO_ADDON')
  assert.match(out.message, new RegExp(`\\(${platformKey()}, Node `))
  assert.match(out.message, new RegExp(`@sessdb/node-${platformKey()}`))
  assert.match(out.message, /bindings\/node\/build\.sh/)
})

// Each batch appended with `batchStart` is remembered as one writer's batch: `rawJsonl` packs
// chunk runs within a batch, never across one (as DSH's JSONL writer writes each batch), and
// `pack: false` packs none.
test('rawJsonl packs chunk runs within each batch marked by batchStart', async () => {
  const chunk = (seq, text) => ({
    type: 'assistant/chunk',
    seq,
    time: 1000 + seq,
    data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text } },
  })
  const rows = async (batchStart, pack) => {
    const dir = tempDir()
    const store = await Store.open(dir)
    const first = [turnStart(0, 1), { type: 'step/start', seq: 1, time: 1001, data: { turn: 1, step: 1 } }]
    await store.createSession(header('c'), [...first, ...[2, 3, 4, 5].map((s) => chunk(s, `t${s}`))], { exact: true, batchStart })
    await store.appendBatch('c', [6, 7, 8, 9].map((s) => chunk(s, `t${s}`)), { batchStart })
    const text = await store.rawJsonl('c', { pack })
    await store.close()
    return text.split('\n').filter((l) => l.includes('"text-chunks"')).length
  }
  assert.equal(await rows(true, true), 2, 'one packed row per batch')
  assert.equal(await rows(false, true), 1, 'unmarked batches: one run across them')
  assert.equal(await rows(true, false), 0, 'pack: false')
})

// A store is created only in a new or empty directory: one holding other files is refused,
// with nothing written into it.
test('open of a directory of other files is NOT_A_STORE', async () => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine')
  await assert.rejects(Store.open(dir), { code: 'NOT_A_STORE' })
  assert.deepEqual(fs.readdirSync(dir), ['notes.txt'])
})

// `read` gets the chunk runs packed and expands them: the objects are those `JSON.parse` of
// each event's line gives — values, keys and key order — for chunks in DSH's form and not.
test('read gives what parsing each line gives, chunk runs packed or not', async () => {
  const dir = tempDir()
  const store = await Store.open(dir)
  const chunk = (seq, data) => ({ type: 'assistant/chunk', seq, time: 1000 + seq * 7, data })
  const text = (seq, t, index = 0) => chunk(seq, { turn: 1, step: 1, chunk: { type: 'text-delta', index, text: t } })
  const events = [
    turnStart(0, 1),
    { type: 'step/start', seq: 1, time: 1001, data: { turn: 1, step: 1 } },
    text(2, 'plain'),
    text(3, 'quote " and \\ and \n newline'),
    text(4, 'ünïcödé ✓ 🚀'),
    chunk(5, { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: 'think' } }),
    chunk(6, { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: 'more' } }),
    text(7, 'other index', 1),
  ]
  await store.createSession(header('p'), events, { exact: true })
  // Not DSH's form: keys in another order (stored as received) — a line of its own.
  await store.appendBatch('p', [
    `{"type":"assistant/chunk","seq":8,"time":5,"data":{"step":1,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}}`,
    text(9, 'after'),
    text(10, ''),
    { type: 'step/end', seq: 11, time: 2000, data: { turn: 1, step: 1 } },
  ])
  const parsed = (await store.readLines('p')).map((l) => JSON.parse(l))
  const objects = await store.read('p')
  assert.equal(objects.length, 12)
  assert.deepEqual(objects.map((o) => JSON.stringify(o)), parsed.map((o) => JSON.stringify(o)))
  assert.deepEqual(objects, parsed)
  // A range inside a run, and an empty one.
  assert.deepEqual(await store.read('p', 3, 6), parsed.slice(3, 6))
  assert.deepEqual(await store.read('p', 5, 5), [])
  await store.close()
})

// `list` crosses as one JSON array: ids that need escaping come back as they were, a fork
// names its parent, the header is the session's header object.
test('list gives every session as it is, ids escaped and forks with their parent', async () => {
  const store = await Store.open(tempDir())
  const odd = 'quote " back \\ slash ü \u2028 end'
  await store.createSession(header(odd), [turnStart(0, 1), user(1, 'u1', 'a'), turnEnd(2, 1)], { exact: true })
  const kid = await store.fork(odd, { childId: 'kid' })
  const rows = await store.list()
  assert.deepEqual(rows.map((r) => r.id).sort(), ['kid', odd].sort())
  const root = rows.find((r) => r.id === odd)
  const fork = rows.find((r) => r.id === kid)
  assert.deepEqual(root.header, header(odd))
  assert.equal(root.parent, null)
  assert.equal(root.events, 3)
  assert.equal(root.turnOpen, false)
  assert.equal(root.revision, await store.revision(odd))
  assert.equal(fork.parent, odd)
  assert.equal(fork.header.parentSession, odd)
  assert.equal(fork.revision, await store.revision(kid))
  await store.close()
})

test('list() by order, newest first, at most a limit; bad options refused', async () => {
  const store = await Store.open(tempDir())
  // Created at 1000, 1001, 1002 in the order c, a, b; the last event's time 10 + seq count.
  for (const [i, id] of ['c', 'a', 'b'].entries()) {
    await store.createSession({ ...header(id), createdAt: 1000 + i }, [turnStart(0, 1)], { exact: true })
  }
  await store.appendBatch('a', [user(1, 'u1', 'x'), user(2, 'u2', 'y')])
  const ids = (rows) => rows.map((r) => r.id)
  assert.deepEqual(ids(await store.list()), ['a', 'b', 'c'])
  assert.deepEqual(ids(await store.list({ sort: 'created' })), ['c', 'a', 'b'])
  assert.deepEqual(ids(await store.list({ sort: 'created', descending: true, limit: 2 })), ['b', 'a'])
  // `a`'s last event is the latest (time 1002); the others end at 1000 (ties by id, reversed).
  assert.deepEqual(ids(await store.list({ sort: 'updated', descending: true, limit: 1 })), ['a'])
  assert.deepEqual(ids(await store.list({ sort: 'updated', descending: true })), ['a', 'c', 'b'])
  assert.deepEqual(ids(await store.list({ sort: 'events', descending: true, limit: 1 })), ['a'])
  assert.deepEqual(await store.list({ limit: 0 }), [])
  for (const bad of [{ sort: 'newest' }, { limit: -1 }, { limit: 1.5 }, { descending: 'yes' }, { order: 'id' }]) {
    await assert.rejects(store.list(bad), (e) => e.code === 'INVALID_ARGUMENT', JSON.stringify(bad))
  }
  // The store's own order: every session once, each row as by id.
  const byId = (rows) => [...rows].sort((x, y) => (x.id < y.id ? -1 : 1))
  assert.deepEqual(byId(await store.list({ sort: 'stored' })), await store.list())
  await store.close()
})

test('listSnapshots() of more sessions than one piece holds: every session once, as list() gives it', async () => {
  // The addon hands the rows over in pieces of 512, 1024, 2048… (src/snapshots.rs): 2,100
  // sessions cross three pieces' bounds.
  const dir = tempDir()
  let store = await Store.open(dir)
  const n = 2100
  for (let i = 0; i < n; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, k) =>
      store.createSession(header(`s-${i + k}`), [turnStart(0, 1)], { exact: true })))
  }
  const check = async () => {
    const rows = await store.list()
    const snaps = await store.listSnapshots()
    assert.equal(snaps.length, n)
    assert.equal(new Set(snaps.map((s) => s.header.id)).size, n)
    snaps.sort((a, b) => (a.header.id < b.header.id ? -1 : 1))
    assert.deepEqual(snaps, rows.map((r) => {
      const { type, ...meta } = r.header
      return { header: meta, revision: r.revision }
    }))
  }
  await check()
  await store.close()
  store = await Store.open(dir, { readOnly: true })
  await check()
  await store.close()
  await assert.rejects(store.listSnapshots(), (e) => e.code === 'CLOSED')
})

test('listSnapshots() gives each session as DSH lists it: the header without its type, the revision', async () => {
  const dir = tempDir()
  let store = await Store.open(dir)
  for (const id of ['x', 'y', 'z']) {
    await store.createSession({ ...header(id), parentSession: id === 'z' ? 'x' : undefined }, [turnStart(0, 1)], { exact: true })
  }
  const check = async () => {
    const rows = await store.list()
    const snaps = [...(await store.listSnapshots())].sort((a, b) => (a.header.id < b.header.id ? -1 : 1))
    assert.deepEqual(snaps, rows.map((r) => {
      const { type, ...meta } = r.header
      assert.equal(type, 'session')
      return { header: meta, revision: r.revision }
    }))
  }
  await check()
  // From the checkpoint's index after a reopen (the sessions not decoded) too.
  await store.close()
  store = await Store.open(dir)
  await check()
  await store.appendBatch('y', [turnEnd(1, 1)])
  await check()
  await store.close()
})
