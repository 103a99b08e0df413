// SQLite storage of request log entries: batched inserts, lookup by id, filtered pages newest first.

import type { Database, SQLQueryBindings } from 'bun:sqlite'
import { jsonText } from '../json-text'
import { decodeCursor, encodeCursor, withoutBodies } from '../log-cursor'
import type { LogEntry, LogQuery, LogStats, LogStatsQuery, LogStore, SpendQuery } from '../types'
import { statsReport } from './log-reports'
import { dimensionOf, MAX_METADATA_VALUES, OTHER_VALUE, rollup, type UsageQuery, type UsageRow } from '../usage-rollup'

interface UsageSumRow {
  key: string
  requests: number
  errors: number
  input: number
  cached: number
  written: number
  output: number
  reasoning: number
  cost: number
  priced: number
}

interface EntryRow {
  entry: string
  created_at: number
  request_id: string
  request_body?: string | null
  response_body?: string | null
}

export class SqliteLogStore implements LogStore {
  private readonly insertBatch: (entries: LogEntry[]) => void
  private readonly countValues
  /** Distinct values rolled up per org, metadata key and day (loaded on first sight). */
  private readonly valueCounts = new Map<string, number>()
  private readonly pruneBatch: (before: number, limit: number) => number
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
    const addUsage = writeDb.query(
      `INSERT INTO usage_daily VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
       ON CONFLICT (org_id, dim, day, value) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
         input_tokens = input_tokens + excluded.input_tokens, cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, output_tokens = output_tokens + excluded.output_tokens,
         reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, cost_usd = cost_usd + excluded.cost_usd, priced = priced + excluded.priced`,
    )
    const exists = writeDb.query('SELECT 1 FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day = ?3 AND value = ?4')
    this.countValues = writeDb.query<{ n: number }, [string, string, string]>(
      'SELECT count(*) AS n FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day = ?3',
    )
    this.insertBatch = writeDb.transaction((entries: LogEntry[]) => {
      const written: LogEntry[] = []
      for (const e of entries) {
        const at = Date.parse(e.createdAt)
        const inserted = insert.run(
          e.requestId, e.orgId, at, e.model, e.requestedModel, e.status, e.endUserId, JSON.stringify(withoutBodies(e)),
          e.provider, e.authMode === 'GwKey' ? e.subject : null, Math.round(e.latencyMs),
          e.ttftMs === null ? null : Math.round(e.ttftMs), e.usage.promptTokens, e.usage.cachedTokens,
          e.usage.completionTokens, e.costUsd,
        )
        if (inserted.changes === 0) continue // already written: a retried batch never duplicates
        written.push(e)
        for (const [k, v] of Object.entries(e.metadata)) meta.run(e.orgId, k, String(v), at, e.requestId)
        if (e.requestBody !== undefined || e.responseBody !== undefined)
          bodies.run(
            e.requestId,
            e.requestBody === undefined ? null : jsonText(e.requestBody),
            e.responseBody === undefined ? null : jsonText(e.responseBody),
          )
      }
      for (const c of rollup(written)) {
        if (c.dim.startsWith('metadata.') && !exists.get(c.orgId, c.dim, c.day, c.value) && !this.roomFor(c.orgId, c.dim, c.day)) c.value = OTHER_VALUE
        const t = c.tokens
        addUsage.run(c.orgId, c.dim, c.day, c.value, c.requests, c.errors, t.input, t.cachedInput, t.cacheWrite, t.output, t.reasoning, c.costUsd, c.priced)
      }
    })
    const oldest = writeDb.query<{ request_id: string; org_id: string; entry: string }, [number, number]>(
      'SELECT request_id, org_id, entry FROM request_logs WHERE created_at < ?1 ORDER BY created_at LIMIT ?2',
    )
    const dropLog = writeDb.query('DELETE FROM request_logs WHERE request_id = ?1')
    const dropBodies = writeDb.query('DELETE FROM request_log_bodies WHERE request_id = ?1')
    const dropMeta = writeDb.query(
      'DELETE FROM request_log_metadata WHERE org_id = ?1 AND key = ?2 AND value = ?3 AND created_at = ?4 AND request_id = ?5',
    )
    this.pruneBatch = writeDb.transaction((before: number, limit: number): number => {
      const rows = oldest.all(before, limit)
      for (const r of rows) {
        const e = JSON.parse(r.entry) as LogEntry
        const at = Date.parse(e.createdAt)
        for (const [k, v] of Object.entries(e.metadata ?? {})) dropMeta.run(r.org_id, k, String(v), at, r.request_id)
        dropBodies.run(r.request_id)
        dropLog.run(r.request_id)
      }
      return rows.length
    })
    this.q = {
      get: db.query<EntryRow, [string, string]>(
        `SELECT l.entry, l.created_at, l.request_id, b.request_body, b.response_body
         FROM request_logs l LEFT JOIN request_log_bodies b ON b.request_id = l.request_id
         WHERE l.request_id = ?1 AND l.org_id = ?2`,
      ),
    }
  }

  /** Whether a new value of this metadata key may get its own roll-up row today (one more is counted). */
  private roomFor(orgId: string, dim: string, day: string): boolean {
    const k = `${orgId}\u0000${dim}\u0000${day}`
    let n = this.valueCounts.get(k)
    if (n === undefined) {
      if (this.valueCounts.size >= 10_000) this.valueCounts.clear()
      n = this.countValues.get(orgId, dim, day)?.n ?? 0
    }
    if (n >= MAX_METADATA_VALUES) return false
    this.valueCounts.set(k, n + 1)
    return true
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

  async stats(q: LogStatsQuery): Promise<LogStats> {
    return statsReport(this.db, q)
  }

  async pruneLogs(before: number, limit: number): Promise<number> {
    return this.pruneBatch(before, limit)
  }

  async usage(q: UsageQuery): Promise<UsageRow[]> {
    const { dim, byDay } = dimensionOf(q.groupBy)
    const rows = this.db
      .query<UsageSumRow, [string, string, string, string]>(
        `SELECT ${byDay ? 'day' : 'value'} AS key, sum(requests) AS requests, sum(errors) AS errors, sum(input_tokens) AS input,
           sum(cached_input_tokens) AS cached, sum(cache_write_tokens) AS written, sum(output_tokens) AS output,
           sum(reasoning_tokens) AS reasoning, sum(cost_usd) AS cost, sum(priced) AS priced
         FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day >= ?3 AND day <= ?4
         GROUP BY 1 ORDER BY ${byDay ? '1' : 'cost DESC, requests DESC, 1'}`,
      )
      .all(q.orgId, dim, q.fromDay, q.toDay)
    return rows.map((r) => ({
      key: r.key === '' ? null : r.key,
      requests: r.requests,
      errors: r.errors,
      tokens: { input: r.input, cachedInput: r.cached, cacheWrite: r.written, output: r.output, reasoning: r.reasoning },
      costUsd: r.priced > 0 ? Math.round(r.cost * 1e9) / 1e9 : null,
    }))
  }

  async spend(q: SpendQuery): Promise<number> {
    const row = this.db
      .query<{ usd: number | null }, [string, string, string, string, string]>(
        'SELECT sum(cost_usd) AS usd FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND value = ?3 AND day >= ?4 AND day <= ?5',
      )
      .get(q.orgId, q.dim, q.value, q.fromDay, q.toDay)
    return row?.usd ?? 0
  }

  async countLogs(orgId?: string): Promise<number> {
    const row = orgId
      ? this.db.query<{ n: number }, [string]>('SELECT count(*) AS n FROM request_logs WHERE org_id = ?1').get(orgId)
      : this.db.query<{ n: number }, []>('SELECT count(*) AS n FROM request_logs').get()
    return row?.n ?? 0
  }
}
