'use strict'
// A program as a user of @sessdb/node writes it (CommonJS), run from the install directory.
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Store, platformKey } = require('@sessdb/node')

async function main() {
  const addon = require.resolve(`@sessdb/node-${platformKey()}`)
  assert.ok(addon.startsWith(process.cwd()), `the addon comes from the install: ${addon}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sessdb-user-'))
  const store = await Store.open(path.join(dir, 'store'), { durability: 'sync' })
  const header = { type: 'session', version: 0, id: 'hello', createdAt: 1000, cwd: '/w' }
  const user = { type: 'user/message', seq: 0, time: 1001, surfaceOp: 'append',
    data: { id: 'm1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'hi' }] } }
  assert.equal(await store.createSession(header, [user], { exact: true }), 1)
  const [event] = await store.read('hello')
  assert.equal(event.data.content[0].text, 'hi')
  assert.deepEqual((await store.list()).map((r) => r.id), ['hello'])
  await assert.rejects(store.appendBatch('hello', [user]), (e) => typeof e.code === 'string')
  await store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  console.log(`cjs ok on Node ${process.versions.node} (${platformKey()})`)
}
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
