// Turns Bun.SQL's PostgreSQL errors into the store's own: uniqueness clashes and an unreachable server.

import { StoreConflictError, StoreUnavailableError } from '../errors'

const UNIQUE_VIOLATION = '23505'
/** Server-side classes that mean "not now, try again": connection exceptions, shutdown, too many clients. */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-3]|53300)/

/** The store's error for `err`; `what` names the record an insert was creating. */
export function storeError(err: unknown, what?: string): unknown {
  if (!(err instanceof Error)) return err
  const { code, errno } = err as Error & { code?: string; errno?: string }
  if (code === 'ERR_POSTGRES_SERVER_ERROR') {
    if (errno === UNIQUE_VIOLATION && what) return new StoreConflictError(`${what} already exists`, { cause: err })
    if (errno && UNAVAILABLE_SQLSTATE.test(errno)) return new StoreUnavailableError(err.message, { cause: err })
    return err
  }
  // Every client-side failure (refused, closed, timed out, TLS, …) means the server cannot be used now.
  if (code?.startsWith('ERR_POSTGRES_')) return new StoreUnavailableError(err.message, { cause: err })
  if ((err as { code?: string }).code === 'ECONNREFUSED') return new StoreUnavailableError(err.message, { cause: err })
  return err
}

/**
 * How long a query may take before the server counts as unreachable: a server that hangs (paused, a
 * network blackhole) answers nothing and refuses nothing, and without it every caller would wait for
 * ever (log entries never spooled, shutdown never done). A write past it may still land later: the
 * stores' inserts are idempotent, so its spooled copy is written once.
 */
export const QUERY_DEADLINE_MS = 10_000

/** Awaits a query, rethrowing its failure (or its silence past QUERY_DEADLINE_MS) as the store's own error. */
export async function q<T>(query: PromiseLike<T>, what?: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      query,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StoreUnavailableError(`the database answered nothing within ${QUERY_DEADLINE_MS / 1000} s`)), QUERY_DEADLINE_MS)
      }),
    ])
  } catch (err) {
    throw storeError(err, what)
  } finally {
    clearTimeout(timer)
  }
}
