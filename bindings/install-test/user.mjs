// A program as a user of @sessdb/node writes it (ES module, top-level await).
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '@sessdb/node'

const dir = mkdtempSync(join(tmpdir(), 'sessdb-user-'))
const store = await Store.open(join(dir, 'store'))
await store.createSession({ type: 'session', version: 0, id: 'esm', createdAt: 1000, cwd: '/w' })
const rows = await store.list()
assert.deepEqual(rows.map((r) => [r.id, r.parent]), [['esm', null]])
await store.close()
await assert.rejects(Store.open(join(dir, 'typo'), { readOnly: true }), { code: 'NOT_FOUND' })
rmSync(dir, { recursive: true, force: true })
console.log(`esm ok on Node ${process.versions.node}`)
