// DSH's vitest configuration, run on the *installed* @sessdb/dsh-session-persistence: its
// compiled JavaScript (in node_modules) is transformed by vite like DSH's own code, and the
// DSH packages it imports (peer dependencies) resolve as they do for DSH's code, so both
// share one instance of each.
import { fileURLToPath } from 'node:url'
import base from '../../../vitest.config.ts'

const here = fileURLToPath(new URL('./src/index.ts', import.meta.url))
const peers = {
  name: 'sessdb-installed-peers',
  enforce: 'pre' as const,
  async resolveId(this: any, source: string, importer: string | undefined, options: object) {
    if (importer?.includes('/node_modules/@sessdb/') && source.startsWith('@deepseek-ai/')) {
      return this.resolve(source, here, { ...options, skipSelf: true })
    }
    return null
  },
}
const inline = [/@sessdb\/dsh-session-persistence/]
export default {
  ...base,
  test: {
    ...base.test,
    projects: base.test.projects.map((p: any) => ({
      ...p,
      plugins: [peers, ...(p.plugins ?? [])],
      test: { ...p.test, server: { deps: { inline } } },
    })),
  },
}
