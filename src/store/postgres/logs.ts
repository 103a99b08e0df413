// PostgreSQL storage of request log entries: multi-row batch inserts, lookup by id, filtered pages newest first.

import type { SQL } from 'bun'
import { decodeCursor, encodeCursor, withoutBodies } from '../log-cursor'
import type { LogEntry, LogQuery, LogStore } from '../types'
import { q } from './errors'

interface EntryRow {
  entry: string
  created_at: string | number
  request_id: string
  request_body?: string | null
  response_body?: string | null
}

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v))

export class PgLogStore implements LogStore {
  constructor(private readonly sql: SQL) {}

  /** One multi-row INSERT per batch; a request id already stored is skipped, so a retried batch never duplicates. */
  async insertLogs(entries: LogEntry[]): Promise<void> {
    if (!entries.length) return
    const rows = entries.map((e) => ({
      request_id: e.requestId,
      org_id: e.orgId,
      created_at: Date.parse(e.createdAt),
      model: e.model,
      requested_model: e.requestedModel,
      status: e.status,
      end_user_id: e.endUserId,
      metadata: Object.fromEntries(Object.entries(e.metadata).map(([k, v]) => [k, String(v)])),
      entry: JSON.stringify(withoutBodies(e)),
      request_body: json(e.requestBody),
      response_body: json(e.responseBody),
    }))
    await q(this.sql`INSERT INTO request_logs ${this.sql(rows)} ON CONFLICT (request_id) DO NOTHING`)
  }

  async getLog(orgId: string, requestId: string): Promise<LogEntry | undefined> {
    const [row] = await q<EntryRow[]>(this.sql`
      SELECT entry, request_body, response_body FROM request_logs WHERE request_id = ${requestId} AND org_id = ${orgId}`)
    if (!row) return undefined
    const entry = JSON.parse(row.entry) as LogEntry
    if (row.request_body != null) entry.requestBody = JSON.parse(row.request_body)
    if (row.response_body != null) entry.responseBody = JSON.parse(row.response_body)
    return entry
  }

  async queryLogs(lq: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }> {
    const sql = this.sql
    const where = [sql`org_id = ${lq.orgId}`]
    if (lq.metadata.length) where.push(sql`metadata @> ${Object.fromEntries(lq.metadata)}::jsonb`)
    if (lq.model) where.push(sql`(model = ${lq.model} OR requested_model = ${lq.model})`)
    if (lq.status === 'success') where.push(sql`status < 400`)
    else if (lq.status === 'error') where.push(sql`status >= 400`)
    else if (typeof lq.status === 'number') where.push(sql`status = ${lq.status}`)
    if (lq.user) where.push(sql`end_user_id = ${lq.user}`)
    if (lq.since !== undefined) where.push(sql`created_at >= ${lq.since}`)
    if (lq.until !== undefined) where.push(sql`created_at < ${lq.until}`)
    const cursor = lq.cursor ? decodeCursor(lq.cursor) : undefined
    if (cursor) where.push(sql`(created_at, request_id) < (${cursor.createdAt}, ${cursor.requestId})`)
    const cond = where.reduce((acc, w) => sql`${acc} AND ${w}`)
    const rows = await q<EntryRow[]>(sql`
      SELECT entry, created_at, request_id FROM request_logs WHERE ${cond}
      ORDER BY created_at DESC, request_id DESC LIMIT ${lq.limit + 1}`)
    const page = rows.slice(0, lq.limit)
    const last = page[page.length - 1]
    return {
      data: page.map((r) => JSON.parse(r.entry) as LogEntry),
      nextCursor: rows.length > lq.limit && last ? encodeCursor(Number(last.created_at), last.request_id) : null,
    }
  }

  async countLogs(orgId?: string): Promise<number> {
    const [row] = await q<{ n: string }[]>(
      orgId ? this.sql`SELECT count(*) AS n FROM request_logs WHERE org_id = ${orgId}` : this.sql`SELECT count(*) AS n FROM request_logs`,
    )
    return Number(row?.n ?? 0)
  }
}
