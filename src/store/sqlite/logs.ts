// SQLite storage of request log entries: batched inserts, lookup by id, filtered pages newest first.

import type { Database, SQLQueryBindings } from 'bun:sqlite'
import type { LogEntry, LogQuery, LogStats, LogStatsQuery, LogStore, UsageQuery, UsageRow } from '../types'
import { statsReport, usageReport } from './log-reports'

interface EntryRow {
  entry: string
  created_at: number
  request_id: string
  request_body?: string | null
  response_body?: string | null
}

export function encodeCursor(createdAt: number, requestId: string): string {
  return Buffer.from(`${createdAt}|${requestId}`).toString('base64url')
}

export function decodeCursor(cursor: string): { createdAt: number; requestId: string } | undefined {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|')
  const createdAt = Number(at)
  return Number.isInteger(createdAt) && id ? { createdAt, requestId: id } : undefined
}

function withoutBodies(e: LogEntry): Omit<LogEntry, 'requestBody' | 'responseBody'> {
  const { requestBody: _req, responseBody: _res, ...rest } = e
  return rest
}

export class SqliteLogStore implements LogStore {
  private readonly insertBatch: (entries: LogEntry[]) => void
  private readonly q

  /** `writeDb`: the connection batches are written on (see createSqliteStore); reads use `db`. */
  constructor(
    private readonly db: Database,
    writeDb: Database = db,
  ) {
    const insert = writeDb.query(
      `INSERT OR IGNORE INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, entry,
         provider, key_id, latency_ms, ttft_ms, prompt_tokens, cached_tokens, completion_tokens, cost_usd)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)`,
    )
    const meta = writeDb.query(
      'INSERT OR IGNORE INTO request_log_metadata (org_id, key, value, created_at, request_id) VALUES (?1, ?2, ?3, ?4, ?5)',
    )
    const bodies = writeDb.query(
      'INSERT OR IGNORE INTO request_log_bodies (request_id, request_body, response_body) VALUES (?1, ?2, ?3)',
    )
    this.insertBatch = writeDb.transaction((entries: LogEntry[]) => {
      for (const e of entries) {
        const at = Date.parse(e.createdAt)
        const inserted = insert.run(
          e.requestId, e.orgId, at, e.model, e.requestedModel, e.status, e.endUserId, JSON.stringify(withoutBodies(e)),
          e.provider, e.authMode === 'GwKey' ? e.subject : null, Math.round(e.latencyMs),
          e.ttftMs === null ? null : Math.round(e.ttftMs), e.usage.promptTokens, e.usage.cachedTokens,
          e.usage.completionTokens, e.costUsd,
        )
        if (inserted.changes === 0) continue // already written: a retried batch never duplicates
        for (const [k, v] of Object.entries(e.metadata)) meta.run(e.orgId, k, String(v), at, e.requestId)
        if (e.requestBody !== undefined || e.responseBody !== undefined)
          bodies.run(
            e.requestId,
            e.requestBody === undefined ? null : JSON.stringify(e.requestBody),
            e.responseBody === undefined ? null : JSON.stringify(e.responseBody),
          )
      }
    })
    this.q = {
      get: db.query<EntryRow, [string, string]>(
        `SELECT l.entry, l.created_at, l.request_id, b.request_body, b.response_body
         FROM request_logs l LEFT JOIN request_log_bodies b ON b.request_id = l.request_id
         WHERE l.request_id = ?1 AND l.org_id = ?2`,
      ),
    }
  }

  async insertLogs(entries: LogEntry[]): Promise<void> {
    this.insertBatch(entries)
  }

  async getLog(orgId: string, requestId: string): Promise<LogEntry | undefined> {
    const row = this.q.get.get(requestId, orgId)
    if (!row) return undefined
    const entry = JSON.parse(row.entry) as LogEntry
    if (row.request_body != null) entry.requestBody = JSON.parse(row.request_body)
    if (row.response_body != null) entry.responseBody = JSON.parse(row.response_body)
    return entry
  }

  async queryLogs(q: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }> {
    const where: string[] = []
    const args: SQLQueryBindings[] = []
    const arg = (v: SQLQueryBindings) => {
      args.push(v)
      return `?${args.length}`
    }
    // With metadata filters the first one drives the scan (an index range in time order); the
    // others are point lookups on the same index.
    const [first, ...others] = q.metadata
    const t = first ? 'm0' : 'l'
    let from = 'request_logs l'
    if (first) {
      from = 'request_log_metadata m0 JOIN request_logs l ON l.request_id = m0.request_id'
      where.push(`m0.org_id = ${arg(q.orgId)}`, `m0.key = ${arg(first[0])}`, `m0.value = ${arg(first[1])}`)
      others.forEach(([k, v], i) =>
        where.push(
          `EXISTS (SELECT 1 FROM request_log_metadata m${i + 1} WHERE m${i + 1}.org_id = m0.org_id AND m${i + 1}.key = ${arg(k)}
           AND m${i + 1}.value = ${arg(v)} AND m${i + 1}.created_at = m0.created_at AND m${i + 1}.request_id = m0.request_id)`,
        ),
      )
    } else where.push(`l.org_id = ${arg(q.orgId)}`)
    if (q.model) where.push(`(l.model = ${arg(q.model)} OR l.requested_model = ?${args.length})`)
    if (q.provider) where.push(`l.provider = ${arg(q.provider)}`)
    if (q.status === 'success') where.push('l.status < 400')
    else if (q.status === 'error') where.push('l.status >= 400')
    else if (typeof q.status === 'number') where.push(`l.status = ${arg(q.status)}`)
    if (q.user) where.push(`l.end_user_id = ${arg(q.user)}`)
    if (q.since !== undefined) where.push(`${t}.created_at >= ${arg(q.since)}`)
    if (q.until !== undefined) where.push(`${t}.created_at < ${arg(q.until)}`)
    const cursor = q.cursor ? decodeCursor(q.cursor) : undefined
    if (cursor) {
      const at = arg(cursor.createdAt)
      where.push(`(${t}.created_at < ${at} OR (${t}.created_at = ${at} AND ${t}.request_id < ${arg(cursor.requestId)}))`)
    }
    const sql = `SELECT l.entry, l.created_at, l.request_id FROM ${from} WHERE ${where.join(' AND ')}
      ORDER BY ${t}.created_at DESC, ${t}.request_id DESC LIMIT ${arg(q.limit + 1)}`
    const rows = this.db.query<EntryRow, SQLQueryBindings[]>(sql).all(...args)
    const page = rows.slice(0, q.limit)
    const last = page[page.length - 1]
    return {
      data: page.map((r) => JSON.parse(r.entry) as LogEntry),
      nextCursor: rows.length > q.limit && last ? encodeCursor(last.created_at, last.request_id) : null,
    }
  }

  async usage(q: UsageQuery): Promise<UsageRow[]> {
    return usageReport(this.db, q)
  }

  async stats(q: LogStatsQuery): Promise<LogStats> {
    return statsReport(this.db, q)
  }

  async countLogs(orgId?: string): Promise<number> {
    const row = orgId
      ? this.db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM request_logs WHERE org_id = ?1').get(orgId)
      : this.db.query<{ n: number }, []>('SELECT count(*) AS n FROM request_logs').get()
    return row?.n ?? 0
  }
}
