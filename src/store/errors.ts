// The errors every Store implementation speaks, so callers never read a database's own messages.

/** Base of the store's own errors. */
export class StoreError extends Error {
  override name = 'StoreError'
}

/** A record with the same identity already exists (a concurrent writer won a check-then-insert race). */
export class StoreConflictError extends StoreError {
  override name = 'StoreConflictError'
}

/** The database cannot be reached (connection refused, closed, timed out); retrying later may work. */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError'
}
