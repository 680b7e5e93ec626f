import { Context } from '@deepseek-ai/cordis'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SessionStore from '@deepseek-ai/dsh-session'
import SessdbSessionPersistence from '../src/index.ts'
import { tearLog } from './tear.ts'
import { runPersistenceContract } from '../../../session/session-persistence/tests/contract.ts'
import { runCoordinatorContract, type CoordinatorFixture } from '../../../session/session-persistence/tests/coordinator-contract.ts'

runPersistenceContract('sessdb', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-sessdb-'))
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  const fiber = await ctx.plugin(SessdbSessionPersistence, { path: join(dir, 'store') })
  return {
    persistence: ctx.sessionPersistence,
    dispose: async () => {
      await fiber.dispose()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

runCoordinatorContract('sessdb', async (): Promise<CoordinatorFixture> => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-sessdb-coord-'))
  return {
    mount: async (ctx) => ctx.plugin(SessdbSessionPersistence, { path: join(dir, 'store') }),
    corruptTail: async () => { await tearLog(join(dir, 'store')) },
    cleanup: async () => { await rm(dir, { recursive: true, force: true }) },
  }
})
