// DSH's own app, installed from npm, running its agent on sessdb: the profile row of
// bindings/dsh/README.md ("Use from DSH"), real headless turns against a scripted model on
// 127.0.0.1 (`model.mjs`), a run killed with SIGKILL mid-stream and resumed by DSH's own
// coordinator, and the same script on DSH's JSONL backend giving the same sessions, event for
// event. Run by `run.sh` (which installs DSH and the packed tarballs into an empty folder):
//   DSH_APP_BIN   the installed `dsh`
//   SESSDB_TGZ    the folder of sessdb's npm tarballs
//   SESSDB_CLI    the sessdb binary (`sessdb verify`, `ls`, `export`)
//   DSH_APP_WORK  a scratch folder

import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { startModel } from './model.mjs'
import { place } from './profile.mjs'

const bin = process.env.DSH_APP_BIN
const tgz = process.env.SESSDB_TGZ
const cli = process.env.SESSDB_CLI
const work = process.env.DSH_APP_WORK
for (const [k, v] of Object.entries({ DSH_APP_BIN: bin, SESSDB_TGZ: tgz, SESSDB_CLI: cli, DSH_APP_WORK: work })) {
  if (!v) throw new Error(`${k} is not set (run bindings/dsh-app/run.sh)`)
}
const model = await startModel()
after(() => model.close())

/** How many times the short run is repeated on each backend (with the two others: 20 runs). */
const REPEATS = Number(process.env.DSH_APP_REPEATS ?? 18)

const { workspace, home, run, setUp, resume } = place({ work, bin, tgz, url: model.url })

/** Every session `h`'s backend holds, as DSH's event lines, one event a line (no packing). */
function sessionsOf(h) {
  const out = path.join(work, `export-${h.backend}-${Date.now()}`)
  let store = h.store
  if (h.backend === 'jsonl') {
    store = path.join(work, `imported-${Date.now()}`)
    execFileSync(cli, ['import', store, '--jsonl', h.sessions, '--quiet'])
  }
  execFileSync(cli, ['export', store, '--jsonl', out, '--no-pack', '--quiet'])
  const sessions = []
  for (const project of fs.readdirSync(out)) {
    for (const id of fs.readdirSync(path.join(out, project))) {
      const lines = fs.readFileSync(path.join(out, project, id, 'session.jsonl'), 'utf8').trim().split('\n')
      sessions.push(lines.map((l) => JSON.parse(l)))
    }
  }
  return sessions
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/** An event with what differs between two runs of one script made equal: times, ids, homes. */
function normalized(value, h) {
  if (Array.isArray(value)) return value.map((v) => normalized(v, h))
  if (value !== null && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      out[k] = /(^time$|At$|Ms$|^elapsed|^duration)/.test(k) && typeof v === 'number' ? 0 : normalized(v, h)
    }
    return out
  }
  if (typeof value === 'string') return value.replace(UUID, 'UUID').replaceAll(h.dir, 'DSH_HOME')
  return value
}

/** The task a session was asked (its first user message's text). */
function taskOf(events) {
  const user = events.find((e) => e.type === 'user/message')
  return JSON.stringify(user?.data?.content ?? null)
}

const homes = { jsonl: home('jsonl'), sessdb: home('sessdb') }
const printed = { jsonl: [], sessdb: [] }
const killed = {}

for (const backend of ['jsonl', 'sessdb']) {
  test(`DSH's app on ${backend}: headless turns answered by the scripted model`, async () => {
    const h = homes[backend]
    setUp(h)
    const runs = [
      ['read the notes', /The notes begin: .*line one of the notes/],
      ['long answer please', /piece399/],
      ...Array.from({ length: REPEATS }, (_, i) => [`hello number ${i}`, /Hello from the scripted model\./]),
    ]
    for (const [task, expected] of runs) {
      const stdout = await run(h, ['--profile', 'headless', task])
      assert.match(stdout, expected, `${backend}: ${task}`)
      printed[backend].push(stdout.trim())
    }
  })

  test(`DSH's app on ${backend}: a run killed mid-stream keeps what it wrote, and DSH resumes it`, async () => {
    const h = homes[backend]
    const before = model.chunksSent()
    const child = spawn(bin, ['--profile', 'headless', 'slow answer please'], {
      cwd: workspace,
      env: h.env,
      stdio: 'ignore',
    })
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
    // Killed once the model has streamed a good part of the answer (its persistence writes
    // behind by up to 200 ms: a part of what was streamed is written when the kill comes).
    await new Promise((resolve, reject) => {
      const check = setInterval(() => {
        if (model.chunksSent() - before >= 60) {
          clearInterval(check)
          resolve()
        }
      }, 5)
      exited.then((how) => {
        clearInterval(check)
        reject(new Error(`dsh ended before the kill: ${how}`))
      })
    })
    child.kill('SIGKILL')
    assert.equal(await exited, 'SIGKILL')
    const sessions = sessionsOf(h)
    const slow = sessions.find((s) => taskOf(s).includes('slow answer please'))
    assert.ok(slow, `${backend}: the killed run's session is stored`)
    // What is stored is a prefix of what was streamed, in order, with nothing wrong.
    const texts = slow
      .filter((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'text-delta')
      .map((e) => e.data.chunk.text)
    assert.ok(texts.length > 0, `${backend}: some of the streamed answer was written before the kill`)
    texts.forEach((t, i) => assert.equal(t, `slow${i} `, `${backend}: chunk ${i}`))
    if (backend === 'sessdb') {
      const verified = execFileSync(cli, ['verify', h.store, '--json'], { encoding: 'utf8' })
      assert.equal(JSON.parse(verified).ok, true, verified)
    }
    // DSH's resume: its coordinator closes the open turn through the backend.
    const id = slow[0].id
    const types = await resume(h, id)
    assert.equal(types.at(-1), 'turn/end', `${backend}: ${types.slice(-4)}`)
    const after = sessionsOf(h).find((s) => s[0].id === id)
    assert.deepEqual(after.slice(1).map((e) => e.type), types, `${backend}: the closers are stored`)
    const end = after.at(-1)
    assert.notEqual(end.data.reason.kind, 'completed', JSON.stringify(end))
    killed[backend] = after
  })
}

test("the same script gives the same sessions on sessdb as on DSH's JSONL backend, event for event", () => {
  assert.deepEqual(printed.sessdb, printed.jsonl, 'what DSH printed')
  const bySession = (backend) => {
    const h = homes[backend]
    const out = new Map()
    for (const s of sessionsOf(h)) {
      if (taskOf(s).includes('slow answer please')) continue
      out.set(taskOf(s), s.map((e) => normalized(e, h)))
    }
    return out
  }
  const jsonl = bySession('jsonl')
  const sessdb = bySession('sessdb')
  assert.deepEqual([...sessdb.keys()].sort(), [...jsonl.keys()].sort())
  assert.equal(sessdb.size, REPEATS + 2)
  for (const [task, events] of jsonl) {
    assert.ok(events.length > 10, `${task}: ${events.length} events`)
    assert.deepEqual(sessdb.get(task), events, task)
  }
  // What DSH printed is what the store holds: each run's last assistant message.
  const answers = [...sessdb.values()].map((events) => {
    const last = events.findLast((e) => e.type === 'assistant/message')
    return last.data.message.content.map((c) => c.text ?? '').join('').trim()
  })
  assert.deepEqual(answers.sort(), [...printed.sessdb].sort())
  // And as `sessdb` reads the store DSH wrote: `ls` lists every run, `show --messages` ends
  // each with the answer DSH printed, `verify` finds nothing wrong.
  const store = homes.sessdb.store
  const listed = JSON.parse(execFileSync(cli, ['ls', store, '--json'], { encoding: 'utf8' }))
  assert.equal(listed.length, REPEATS + 3, 'every run, the killed one too')
  assert.ok(listed.every((s) => !s.turnOpen), 'no turn left open (the killed one resumed)')
  const shown = listed.map((s) => {
    const messages = JSON.parse(execFileSync(cli, ['show', store, s.id, '--messages', '--json'], { encoding: 'utf8' }))
    const last = messages.at(-1).message
    return last.role === 'assistant' ? last.content.map((c) => c.text ?? '').join('').trim() : null
  })
  for (const answer of printed.sessdb) assert.ok(shown.includes(answer), answer.slice(0, 60))
  assert.equal(JSON.parse(execFileSync(cli, ['verify', store, '--json'], { encoding: 'utf8' })).ok, true)
  // The killed runs: the same events around a run of chunks cut where the kill fell.
  const shape = (events) =>
    events
      .map((e) => e.type)
      .filter((t, i, all) => t !== 'assistant/chunk' || all[i - 1] !== 'assistant/chunk')
  assert.deepEqual(shape(killed.sessdb), shape(killed.jsonl))
})
