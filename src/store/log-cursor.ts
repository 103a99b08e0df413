// What every LogStore shares: the opaque paging cursor (created_at ms | request id) and the entry without its bodies.

import type { LogEntry } from './types'

/**
 * The most entries of its driving tag one metadata-filtered page looks at (newest first). A page may
 * then hold fewer rows than asked, even none, with a cursor to go on from: so a filter whose tags
 * never meet costs a bounded amount of work per request instead of a walk over every entry of the
 * tag (docs/apis.md, docs/benchmarks.md).
 */
export const FILTER_WINDOW = 1000

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
