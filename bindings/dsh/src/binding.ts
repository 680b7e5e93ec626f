/**
 * The sessdb Node binding this backend stores through: `$SESSDB_NODE_BINDING` when set, else
 * the installed `@sessdb/node` (a dependency of this package), else — the sources run from a
 * sessdb checkout, as DSH's test harness runs them — the binding beside this package
 * (`$SESSDB_PACKAGE_DIR/../node`). Its types are the binding's own `index.d.ts`.
 */

import { createRequire } from 'node:module'
import { join } from 'node:path'
import type * as Binding from '@sessdb/node'

export type { OpenOptions, SessdbError, SessionRow, SessionHeader as StoreHeader } from '@sessdb/node'
export type SessdbStore = Binding.Store

const require = createRequire(import.meta.url)

function bindingPath(): string {
  const explicit = process.env.SESSDB_NODE_BINDING
  if (explicit !== undefined) return join(explicit, 'index.js')
  const checkout = process.env.SESSDB_PACKAGE_DIR
  if (checkout === undefined) return '@sessdb/node'
  try {
    return require.resolve('@sessdb/node')
  } catch {
    return join(checkout, '..', 'node', 'index.js')
  }
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const Store: typeof Binding.Store = (require(bindingPath()) as typeof Binding).Store
