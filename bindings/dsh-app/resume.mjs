// DSH's own resume of a session, run inside a DSH profile directory (so its packages resolve
// as the app's do): DSH's session store and the profile's persistence backend mounted in a
// fresh context, then `load(id)` — DSH's coordinator closes a turn a crash left open (its
// closers) and writes them through the backend. Prints the loaded events' types as JSON.
//
//   node resume.mjs BACKEND_PACKAGE CONFIG_JSON SESSION_ID

import { Context } from '@deepseek-ai/cordis'
import SessionStore from '@deepseek-ai/dsh-session'

const [pkg, configJson, id] = process.argv.slice(2)
const Backend = (await import(pkg)).default
const ctx = new Context()
await ctx.plugin(SessionStore)
const fiber = await ctx.plugin(Backend, JSON.parse(configJson))
try {
  const loaded = await ctx.sessionPersistence.load(id)
  process.stdout.write(JSON.stringify(loaded.events.map((e) => e.type)) + '\n')
} finally {
  await fiber.dispose()
}
