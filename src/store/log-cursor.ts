// What every LogStore shares: the opaque paging cursor (created_at ms | request id) and the entry without its bodies.

import type { LogEntry } from './types'

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
