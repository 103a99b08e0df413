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

/** Awaits a query, rethrowing its failure as the store's own error. */
export async function q<T>(query: PromiseLike<T>, what?: string): Promise<T> {
  try {
    return await query
  } catch (err) {
    throw storeError(err, what)
  }
}
