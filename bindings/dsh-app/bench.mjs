// What a DSH user waits for, sessdb beside DSH's JSONL backend in the same run: DSH's app from
// npm (installed by `run.sh --bench`), a headless session of 50 steps (a tool call each) against
// the scripted model, and DSH's resume of that long session (its coordinator's `load`, the
// core of `--resume`). Rounds alternate the backends; medians and their ratio are printed.
//
//   bindings/dsh-app/run.sh TARBALLS_DIR --bench [ROUNDS]

import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { startModel } from './model.mjs'
import { place } from './profile.mjs'

const rounds = Number(process.argv[2] ?? 5)
const steps = 50
const model = await startModel()
const work = process.env.DSH_APP_WORK
const { home, run, setUp, resume } = place({
  work,
  bin: process.env.DSH_APP_BIN,
  tgz: process.env.SESSDB_TGZ,
  url: model.url,
})
const homes = { jsonl: home('jsonl'), sessdb: home('sessdb') }
for (const h of Object.values(homes)) setUp(h)

/** The id of the newest session of `h` (the run just made). */
function newest(h) {
  if (h.backend === 'sessdb') {
    const out = JSON.parse(
      execFileSync(process.env.SESSDB_CLI, ['ls', h.store, '--json', '--sort', 'created'], { encoding: 'utf8' }),
    )
    return out.at(-1).id
  }
  const dirs = []
  for (const project of fs.readdirSync(h.sessions)) {
    for (const id of fs.readdirSync(path.join(h.sessions, project))) {
      dirs.push({ id, at: fs.statSync(path.join(h.sessions, project, id)).mtimeMs })
    }
  }
  return dirs.sort((a, b) => a.at - b.at).at(-1).id
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const times = { jsonl: { run: [], resume: [] }, sessdb: { run: [], resume: [] } }
for (let r = 0; r < rounds; r++) {
  for (const backend of r % 2 === 0 ? ['jsonl', 'sessdb'] : ['sessdb', 'jsonl']) {
    const h = homes[backend]
    let t = performance.now()
    await run(h, ['--profile', 'headless', `steps ${steps}`])
    times[backend].run.push(performance.now() - t)
    const id = newest(h)
    t = performance.now()
    const types = await resume(h, id)
    times[backend].resume.push(performance.now() - t)
    if (types.filter((x) => x === 'tool/result').length !== steps) throw new Error(`${backend}: ${types.length} events`)
  }
}
await model.close()
const line = (what, key) => {
  const j = median(times.jsonl[key])
  const s = median(times.sessdb[key])
  return `| ${what} | ${s.toFixed(0)} ms | ${j.toFixed(0)} ms | ${(j / s).toFixed(2)}× |`
}
console.log(`${rounds} rounds, medians (backends alternating)`)
console.log('| what | sessdb | DSH JSONL | JSONL ÷ sessdb |')
console.log('|---|---|---|---|')
console.log(line(`headless session of ${steps} steps (dsh start to exit)`, 'run'))
console.log(line(`resume of it (a fresh process: DSH's coordinator load)`, 'resume'))
