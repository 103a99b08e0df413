// What every LogStore shares: the opaque paging cursor (created_at ms | request id) and the entry without its bodies.

import type { LogEntry } from '../domain/log-entry'
import type { LogQuery } from './types'

/**
 * The most entries one page looks at (newest first) in the index range of its driving filter (see
 * drivingFilter). A page may then hold fewer rows than asked, even none, with a cursor to go on
 * from: so a filter that rarely or never matches costs a bounded amount of work per request instead
 * of a walk over every entry of the org (docs/architecture.md "Logs API", docs/benchmarks.md).
 */
export const FILTER_WINDOW = 1000

/**
 * The filter whose index range a page walks, in time order; the others are checked on the entries
 * of that window. Metadata tags and end users are usually the narrowest, then models, then statuses;
 * with none of them (since/until and provider only) the page walks the org's entries by time.
 */
export type DrivingFilter = 'metadata' | 'user' | 'model' | 'status' | 'outcome' | 'time'

export function drivingFilter(q: LogQuery): DrivingFilter {
  if (q.metadata.length) return 'metadata'
  if (q.user) return 'user'
  if (q.model) return 'model'
  if (typeof q.status === 'number') return 'status'
  if (q.status) return 'outcome'
  return 'time'
}

export function encodeCursor(createdAt: number, requestId: string): string {
  return Buffer.from(`${createdAt}|${requestId}`).toString('base64url')
}

export function decodeCursor(cursor: string): { createdAt: number; requestId: string } | undefined {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|')
  const createdAt = Number(at)
  return Number.isInteger(createdAt) && id ? { createdAt, requestId: id } : undefined
}

/** The entry as stored in the log row; bodies are kept apart and read only by id. */
export function withoutBodies(e: LogEntry): Omit<LogEntry, 'requestBody' | 'responseBody'> {
  const { requestBody: _req, responseBody: _res, ...rest } = e
  return rest
}
