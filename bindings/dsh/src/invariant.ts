/**
 * The invariant companion DSH's test setup requires of every package under test.
 * @module @sessdb/dsh-session-persistence-sessdb/invariant
 */

import type { Context } from '@deepseek-ai/cordis'

/** Cordis companion plugin name. */
export const name = 'session-persistence-sessdb-invariant'
/** Service required before the companion can register. */
export const inject = ['invariants']

/**
 * No runtime invariant: the backend's correctness is held by the persistence contract suites.
 * @param ctx - Cordis context carrying the invariant service.
 * @returns the registration's disposer.
 */
export const apply = (ctx: Context): Promise<() => void> =>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  Promise.resolve((ctx as any).invariants.register('@sessdb/dsh-session-persistence-sessdb', () => {}))
