// SQLite storage of request log entries: batched inserts, lookup by id, filtered pages newest first.

import type { Database, SQLQueryBindings, Statement } from 'bun:sqlite'
import { entryText, jsonText } from '../json-text'
import { decodeCursor, drivingFilter, encodeCursor, FILTER_WINDOW, withoutBodies } from '../log-cursor'
import { keptAnswerOf } from '../log-sink'
import type { LogEntry } from '../../domain/log-entry'
import type { CachePut, LogQuery, LogStats, LogStatsQuery, LogStore, SpendQuery } from '../types'
import { statsReport } from './log-reports'
import { inProcessReader, type SqlReader } from './read-thread'
import type { CacheBatch, SqliteCacheWrites } from './response-cache'
import { addCell, dimensionOf, groupKey, MAX_METADATA_VALUES, OTHER_VALUE, type RollupCell, rollup, type UsageQuery, type UsageSum } from '../usage-rollup'

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

type Bind = (v: SQLQueryBindings) => string

/** The time range and the paging cursor on table `t`, their values bound through `a`. */
function timeBounds(t: string, q: LogQuery, cursor: { createdAt: number; requestId: string } | undefined, a: Bind): string[] {
  const w: string[] = []
  if (q.since !== undefined) w.push(`${t}.created_at >= ${a(q.since)}`)
  if (q.until !== undefined) w.push(`${t}.created_at < ${a(q.until)}`)
  if (cursor) {
    // The first term bounds the index range: the OR alone would walk every newer entry to skip it.
    const at = a(cursor.createdAt)
    w.push(`${t}.created_at <= ${at}`, `(${t}.created_at < ${at} OR (${t}.created_at = ${at} AND ${t}.request_id < ${a(cursor.requestId)}))`)
  }
  return w
}

/** Positional parameters of one statement: `arg(v)` binds `v` and gives its placeholder. */
function binder(): { args: SQLQueryBindings[]; arg: Bind } {
  const args: SQLQueryBindings[] = []
  return {
    args,
    arg: (v) => {
      args.push(v)
      return `?${args.length}`
    },
  }
}

/** Rows per multi-row INSERT: a few hundred bound values, far below SQLite's limit (32,766). */
const ROWS_PER_STATEMENT = 50

/**
 * An INSERT of many rows per statement (`VALUES (…), (…)`): the per-call cost of bun:sqlite (bind,
 * step, reset, the result object) paid once per ROWS_PER_STATEMENT rows. `run` takes the rows' values
 * flat, in column order; `tail` follows the values (an upsert's ON CONFLICT clause).
 */
class RowsInsert {
  private readonly full: Statement<{ request_id: string }, SQLQueryBindings[]>

  constructor(
    private readonly db: Database,
    private readonly head: string,
    private readonly cols: number,
    private readonly tail = '',
  ) {
    this.full = db.query(this.sql(ROWS_PER_STATEMENT))
  }

  run(values: SQLQueryBindings[]): void {
    this.each(values, (st, part) => st.run(...part))
  }

  /** Runs the rows as `run` does and gives the rows the tail's RETURNING clause names. */
  returning(values: SQLQueryBindings[]): { request_id: string }[] {
    const out: { request_id: string }[] = []
    this.each(values, (st, part) => out.push(...st.all(...part)))
    return out
  }

  private each(values: SQLQueryBindings[], step: (st: Statement<{ request_id: string }, SQLQueryBindings[]>, part: SQLQueryBindings[]) => void): void {
    const per = ROWS_PER_STATEMENT * this.cols
    for (let i = 0; i < values.length; i += per) {
      const part = values.length - i >= per ? values.slice(i, i + per) : values.slice(i)
      // A last, shorter part: its statement is cached by its text (db.query, finalised with the connection).
      step(part.length === per ? this.full : this.db.query<{ request_id: string }, SQLQueryBindings[]>(this.sql(part.length / this.cols)), part)
    }
  }

  private sql(rows: number): string {
    const one = `(${Array.from({ length: this.cols }, () => '?').join(', ')})`
    return `${this.head} VALUES ${Array.from({ length: rows }, () => one).join(', ')}${this.tail}`
  }
}

export class SqliteLogStore implements LogStore {
  /**
   * 2,000 entries a transaction at the default batch size: ~42,500 entries/s sustained against ~35,000
   * in batches of 500, the lock held 36 ms (median) to 117 (most) instead of 10 to 87; eight batches
   * wrote no faster and held it twice as long (docs/benchmarks.md "Log store").
   */
  readonly catchUpBatches = 4
  private readonly insertBatch: (entries: LogEntry[]) => CacheBatch | undefined
  private readonly countValues
  /** Distinct values rolled up per org, metadata key and day (loaded on first sight). */
  private readonly valueCounts = new Map<string, number>()
  /** The values with their own roll-up row, of metadata keys at their cap (see hasValue). */
  private readonly fullValues = new Map<string, Set<string>>()
  private readonly listValues
  private readonly pruneBatch: (before: number, limit: number) => number
  private readonly q

  /**
   * `writeDb`: the connection batches are written on (see createSqliteStore); lookups by id use `db`;
   * heavy reads (pages, stats, usage reports) go through `reader`, the read thread of a file database.
   * `cache`: the response cache's writes on `writeDb`, for the puts entries carry (keptAnswerOf),
   * written in the entries' transaction.
   */
  constructor(
    private readonly db: Database,
    writeDb: Database = db,
    private readonly reader: SqlReader = inProcessReader(db),
    private readonly cache?: SqliteCacheWrites,
  ) {
    const insert = new RowsInsert(
      writeDb,
      `INSERT OR IGNORE INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, entry,
         provider, key_id, latency_ms, ttft_ms, prompt_tokens, cached_tokens, completion_tokens, cost_usd, response_id)`,
      17,
      ' RETURNING request_id',
    )
    const meta = new RowsInsert(writeDb, 'INSERT OR IGNORE INTO request_log_metadata (org_id, key, value, created_at, request_id)', 5)
    const bodies = new RowsInsert(writeDb, 'INSERT OR IGNORE INTO request_log_bodies (request_id, request_body, response_body)', 3)
    const addUsage = new RowsInsert(
      writeDb,
      'INSERT INTO usage_daily',
      13,
      ` ON CONFLICT (org_id, dim, day, value) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
         input_tokens = input_tokens + excluded.input_tokens, cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, output_tokens = output_tokens + excluded.output_tokens,
         reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, cost_usd = cost_usd + excluded.cost_usd, priced = priced + excluded.priced`,
    )
    const exists = writeDb.query('SELECT 1 FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day = ?3 AND value = ?4')
    this.listValues = writeDb.query<{ value: string }, [string, string, string]>('SELECT value FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day = ?3')
    this.countValues = writeDb.query<{ n: number }, [string, string, string]>(
      'SELECT count(*) AS n FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day = ?3',
    )
    this.insertBatch = writeDb.transaction((entries: LogEntry[]) => {
      // Multi-row statements (RowsInsert): one call per ROWS_PER_STATEMENT rows instead of one per row.
      const rows: SQLQueryBindings[] = []
      const times = entries.map((e) => Date.parse(e.createdAt))
      entries.forEach((e, i) => {
        const at = times[i] as number
        rows.push(
          e.requestId, e.orgId, at, e.model, e.requestedModel, e.status, e.endUserId, entryText(e, () => JSON.stringify(withoutBodies(e))),
          e.provider, e.authMode === 'GwKey' ? e.subject : null, Math.round(e.latencyMs),
          e.ttftMs === null ? null : Math.round(e.ttftMs), e.usage.promptTokens, e.usage.cachedTokens,
          e.usage.completionTokens, e.costUsd, e.responseId ?? null,
        )
      })
      // Ids already held are ignored (a retried batch never duplicates); each inserted id is taken once.
      const inserted = new Set(insert.returning(rows).map((r) => r.request_id))
      const written: LogEntry[] = []
      const metaRows: SQLQueryBindings[] = []
      const bodyRows: SQLQueryBindings[] = []
      entries.forEach((e, i) => {
        if (!inserted.delete(e.requestId)) return
        written.push(e)
        const at = times[i] as number
        for (const k in e.metadata) metaRows.push(e.orgId, k, String(e.metadata[k]), at, e.requestId)
        if (e.requestBody !== undefined || e.responseBody !== undefined)
          bodyRows.push(
            e.requestId,
            e.requestBody === undefined ? null : jsonText(e.requestBody),
            e.responseBody === undefined ? null : jsonText(e.responseBody),
          )
      })
      meta.run(metaRows)
      bodies.run(bodyRows)
      // Cells of values past a key's cap are summed under OTHER_VALUE first: one upsert per batch, not one per value.
      const other = new Map<string, RollupCell>()
      const usageRows: SQLQueryBindings[] = []
      const upsert = (c: RollupCell) =>
        usageRows.push(c.orgId, c.dim, c.day, c.value, c.requests, c.errors, c.tokens.input, c.tokens.cachedInput, c.tokens.cacheWrite, c.tokens.output, c.tokens.reasoning, c.costUsd, c.priced)
      for (const c of rollup(written)) {
        if (c.dim.startsWith('metadata.') && !this.hasValue(exists, c) && !this.roomFor(c.orgId, c.dim, c.day)) {
          const k = `${c.orgId}\u0000${c.dim}\u0000${c.day}`
          const sum = other.get(k)
          if (sum) addCell(sum, c)
          else other.set(k, { ...c, value: OTHER_VALUE, tokens: { ...c.tokens } })
          continue
        }
        upsert(c)
      }
      for (const c of other.values()) upsert(c)
      addUsage.run(usageRows)
      // The response cache's puts of the entries written here (an entry already held had its put written with it).
      if (!this.cache) return undefined
      const puts: CachePut[] = []
      for (const e of written) {
        const put = keptAnswerOf(e)
        if (put) puts.push(put)
      }
      return puts.length ? this.cache.write(puts) : undefined
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
      byResponse: db.query<{ request_id: string }, [string, string]>('SELECT request_id FROM request_logs WHERE org_id = ?1 AND response_id = ?2'),
    }
  }

  /**
   * Whether a metadata value has its own roll-up row. For a key at its cap (MAX_METADATA_VALUES, where
   * high-cardinality tags sit) the values that have one are read once and kept (at most 100 keys' worth),
   * so each new value is not a query; below the cap, one point query.
   */
  private hasValue(exists: Statement, c: RollupCell): boolean {
    const k = `${c.orgId}\u0000${c.dim}\u0000${c.day}`
    const known = this.fullValues.get(k)
    if (known) return known.has(c.value)
    if ((this.valueCounts.get(k) ?? 0) < MAX_METADATA_VALUES) return exists.get(c.orgId, c.dim, c.day, c.value) !== null
    if (this.fullValues.size >= 100) this.fullValues.clear()
    const values = new Set(this.listValues.all(c.orgId, c.dim, c.day).map((r) => r.value))
    this.fullValues.set(k, values)
    return values.has(c.value)
  }

  /** Whether a new value of this metadata key may get its own roll-up row today (one more is counted). */
  private roomFor(orgId: string, dim: string, day: string): boolean {
    const k = `${orgId}\u0000${dim}\u0000${day}`
    let n = this.valueCounts.get(k)
    if (n === undefined) {
      if (this.valueCounts.size >= 10_000) this.valueCounts.clear()
      n = this.countValues.get(orgId, dim, day)?.n ?? 0
    }
    if (n >= MAX_METADATA_VALUES) {
      this.valueCounts.set(k, n)
      return false
    }
    this.valueCounts.set(k, n + 1)
    return true
  }

  async insertLogs(entries: LogEntry[]): Promise<void> {
    const kept = this.insertBatch(entries)
    if (kept) this.cache?.committed(kept)
  }

  takeDroppedCacheKeys(): string[] {
    return this.cache?.takeDropped() ?? []
  }

  async getLog(orgId: string, requestId: string): Promise<LogEntry | undefined> {
    const row = this.q.get.get(requestId, orgId)
    if (!row) return undefined
    const entry = JSON.parse(row.entry) as LogEntry
    if (row.request_body != null) entry.requestBody = JSON.parse(row.request_body)
    if (row.response_body != null) entry.responseBody = JSON.parse(row.response_body)
    return entry
  }

  async getLogByResponseId(orgId: string, responseId: string): Promise<LogEntry | undefined> {
    const row = this.q.byResponse.get(orgId, responseId)
    return row ? this.getLog(orgId, row.request_id) : undefined
  }

  async queryLogs(q: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }> {
    const cursor = q.cursor ? decodeCursor(q.cursor) : undefined
    /** The driving filter's index range (see drivingFilter), newest first, without its LIMIT; binds through `a`. */
    const window = (a: Bind): string => {
      const range = (t: string, from: string, where: string[]) => {
        const w = [...where, ...timeBounds(t, q, cursor, a)]
        return `SELECT ${t}.created_at, ${t}.request_id FROM ${from} WHERE ${w.join(' AND ')} ORDER BY ${t}.created_at DESC, ${t}.request_id DESC`
      }
      const logs = (index: string, ...where: string[]) => range('t', `request_logs t INDEXED BY ${index}`, [`t.org_id = ${a(q.orgId)}`, ...where])
      switch (drivingFilter(q)) {
        case 'metadata': {
          const [k, v] = q.metadata[0] as [string, string]
          return range('m', 'request_log_metadata m', [`m.org_id = ${a(q.orgId)}`, `m.key = ${a(k)}`, `m.value = ${a(v)}`])
        }
        case 'user':
          return logs('request_logs_org_user', `t.end_user_id = ${a(q.user as string)}`)
        case 'model': {
          // The answering or the requested model: the newest window of each index, merged.
          const model = a(q.model as string)
          return `SELECT * FROM (${logs('request_logs_org_model', `t.model = ${model}`)} LIMIT ${FILTER_WINDOW})
            UNION SELECT * FROM (${logs('request_logs_org_requested_model', `t.requested_model = ${model}`)} LIMIT ${FILTER_WINDOW})
            ORDER BY created_at DESC, request_id DESC`
        }
        case 'status':
          return logs('request_logs_org_status', `t.status = ${a(q.status as number)}`)
        case 'outcome':
          return logs('request_logs_org_failed', `t.status >= 400 = ${a(q.status === 'error' ? 1 : 0)}`)
        case 'time':
          return logs('request_logs_org_time')
      }
    }
    const { args, arg } = binder()
    // Every filter is checked on the window's entries (the driving one again, at no cost worth counting).
    const where = [`l.org_id = ${arg(q.orgId)}`]
    q.metadata.slice(1).forEach(([k, v], i) =>
      where.push(
        `EXISTS (SELECT 1 FROM request_log_metadata m${i} WHERE m${i}.org_id = l.org_id AND m${i}.key = ${arg(k)}
         AND m${i}.value = ${arg(v)} AND m${i}.created_at = w.created_at AND m${i}.request_id = w.request_id)`,
      ),
    )
    if (q.model) where.push(`(l.model = ${arg(q.model)} OR l.requested_model = ?${args.length})`)
    if (q.provider) where.push(`l.provider = ${arg(q.provider)}`)
    if (q.status === 'success') where.push('l.status < 400')
    else if (q.status === 'error') where.push('l.status >= 400')
    else if (typeof q.status === 'number') where.push(`l.status = ${arg(q.status)}`)
    if (q.user) where.push(`l.end_user_id = ${arg(q.user)}`)
    const rows = await this.reader.all<EntryRow>(
      `SELECT l.entry, l.created_at, l.request_id FROM (${window(arg)} LIMIT ${FILTER_WINDOW}) w
       JOIN request_logs l ON l.request_id = w.request_id WHERE ${where.join(' AND ')}
       ORDER BY w.created_at DESC, w.request_id DESC LIMIT ${arg(q.limit + 1)}`,
      args,
    )
    const page = rows.slice(0, q.limit)
    const last = page[page.length - 1]
    let nextCursor = rows.length > q.limit && last ? encodeCursor(last.created_at, last.request_id) : null
    if (!nextCursor) {
      // The page looked at a whole window: older entries may still match, from its edge on.
      const e = binder()
      const [edge] = await this.reader.all<{ created_at: number; request_id: string }>(
        `${window(e.arg)} LIMIT 1 OFFSET ${FILTER_WINDOW - 1}`,
        e.args,
      )
      if (edge) nextCursor = encodeCursor(edge.created_at, edge.request_id)
    }
    return { data: page.map((r) => JSON.parse(r.entry) as LogEntry), nextCursor }
  }

  async stats(q: LogStatsQuery): Promise<LogStats> {
    return statsReport(this.reader, q)
  }

  async pruneLogs(before: number, limit: number): Promise<number> {
    return this.pruneBatch(before, limit)
  }

  async usage(q: UsageQuery): Promise<UsageSum[]> {
    const { dim, byDay } = dimensionOf(q.groupBy)
    const rows = await this.reader.all<UsageSumRow>(
        `SELECT ${byDay ? 'day' : 'value'} AS key, sum(requests) AS requests, sum(errors) AS errors, sum(input_tokens) AS input,
           sum(cached_input_tokens) AS cached, sum(cache_write_tokens) AS written, sum(output_tokens) AS output,
           sum(reasoning_tokens) AS reasoning, sum(cost_usd) AS cost, sum(priced) AS priced
         FROM usage_daily WHERE org_id = ?1 AND dim = ?2 AND day >= ?3 AND day <= ?4
         GROUP BY 1 ORDER BY ${byDay ? '1' : 'cost DESC, requests DESC, 1'}`,
        [q.orgId, dim, q.fromDay, q.toDay],
      )
    return rows.map((r) => ({
      key: byDay ? r.key : groupKey(dim, r.key),
      priced: r.priced,
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
