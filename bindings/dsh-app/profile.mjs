// A DSH home with the headless profile set up as a DSH user sets it up (bindings/dsh/README.md,
// "Use from DSH"), on DSH's JSONL backend or on sessdb, and DSH's runs in it: what the app
// test (`app.test.mjs`) and the benchmark (`bench.mjs`) share.

import { spawn, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const here = path.dirname(new URL(import.meta.url).pathname)

/**
 * A place for DSH's runs: `work` (a scratch folder) holds the workspace DSH runs in and one
 * home per backend; `bin` is the installed `dsh`, `tgz` the folder of sessdb's tarballs, `url`
 * the scripted model's.
 */
export function place({ work, bin, tgz, url }) {
  const workspace = path.join(work, 'workspace')
  fs.mkdirSync(workspace, { recursive: true })
  fs.writeFileSync(path.join(workspace, 'notes.txt'), 'line one of the notes\nline two\n')

  /** A DSH home with the headless profile set up for `backend` ('jsonl' or 'sessdb'). */
  function home(backend) {
    const dir = path.join(work, `home-${backend}`)
    const env = {
      ...process.env,
      DSH_HOME: dir,
      DEEPSEEK_BASE_URL: url,
      DEEPSEEK_API_KEY: 'scripted',
      DSH_TELEMETRY_DISABLED: '1',
    }
    const store = path.join(dir, 'sessdb-store')
    return { backend, dir, env, store, sessions: path.join(dir, 'sessions'), profile: path.join(dir, 'profiles', 'headless') }
  }

  function dsh(h, args, options = {}) {
    // stdin closed: a headless run reads a piped stdin as more of its task.
    return execFileSync(bin, args, {
      cwd: workspace,
      env: h.env,
      encoding: 'utf8',
      timeout: 120_000,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options,
    })
  }

  /**
   * One run of DSH that talks to the model: asynchronous, since the model answers from this
   * process's event loop. Resolves to its stdout; rejects on a failure or after two minutes.
   */
  function run(h, args) {
    return new Promise((resolve, reject) => {
      const child = spawn(bin, args, { cwd: workspace, env: h.env, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      const limit = setTimeout(() => child.kill('SIGKILL'), 120_000)
      child.on('exit', (code, signal) => {
        clearTimeout(limit)
        if (code === 0) resolve(stdout)
        else reject(new Error(`dsh ${args.join(' ')}: ${signal ?? code}\n${stderr}`))
      })
    })
  }

  /** The profile, as a DSH user sets it up (bindings/dsh/README.md, "Use from DSH"). */
  function setUp(h) {
    // The first boot makes the profile (its patch layer, package.json, pnpm workspace).
    dsh(h, ['--profile', 'headless', '--dump-config'])
    // DSH's own quirk at 0.1.0-rc.8: the launcher watches the profile's patch file and needs its
    // HMR service, which the headless bundle disables. The title model is left out of the
    // comparison: DSH aborts it when a headless run exits, whichever backend (a race of DSH's).
    let patch = '- id: hmr\n  disabled: false\n- id: session-title-llm\n  disabled: true\n'
    if (h.backend === 'sessdb') {
      // Until sessdb's packages are on the npm registry, pnpm takes them from the tarballs.
      const files = fs.readdirSync(tgz)
      const file = (prefix) => path.join(tgz, files.find((f) => f.startsWith(prefix)))
      fs.appendFileSync(
        path.join(h.profile, 'pnpm-workspace.yaml'),
        `overrides:\n  "@sessdb/node": "file:${file('sessdb-node-0')}"\n` +
          `  "@sessdb/node-linux-x64-gnu": "file:${file('sessdb-node-linux')}"\n`,
      )
      dsh(h, ['plugin', '--profile', 'headless', 'add', file('sessdb-dsh-session-persistence')])
      // The rows as bindings/dsh/README.md gives them, word for word.
      const readme = fs.readFileSync(path.join(here, '..', 'dsh', 'README.md'), 'utf8')
      patch += readme.split('```yaml\n')[1].split('```')[0]
    }
    fs.writeFileSync(path.join(h.profile, 'cordis.patch.yml'), patch)
  }

  /**
   * DSH's resume of session `id` in `h` (`resume.mjs`: DSH's coordinator `load`, which
   * writes the closers of a turn a crash left open); resolves to the loaded events' types.
   */
  function resume(h, id) {
    const [pkg, config] =
      h.backend === 'sessdb'
        ? ['@sessdb/dsh-session-persistence', { path: h.store }]
        : ['@deepseek-ai/dsh-session-persistence-jsonl', { root: h.sessions }]
    fs.copyFileSync(path.join(here, 'resume.mjs'), path.join(h.profile, 'resume.mjs'))
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['resume.mjs', pkg, JSON.stringify(config), id], {
        cwd: h.profile,
        env: h.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`resume ${id}: ${code}\n${stderr}`))))
    })
  }

  return { workspace, home, dsh, run, setUp, resume }
}
