// Turns SQLite's uniqueness failures into the store's own StoreConflictError.

import { StoreConflictError } from '../errors'

const UNIQUE_CODES = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE'])

/** Runs an insert; a uniqueness clash becomes a StoreConflictError saying what clashed. */
export function insertOnce<T>(what: string, run: () => T): T {
  try {
    return run()
  } catch (err) {
    if (err instanceof Error && UNIQUE_CODES.has((err as Error & { code?: string }).code ?? ''))
      throw new StoreConflictError(`${what} already exists`, { cause: err })
    throw err
  }
}
