// PostgreSQL storage of request log entries: multi-row batch inserts, lookup by id, filtered pages newest first.

import type { SQL } from 'bun'
import { entryText, jsonText } from '../json-text'
import { decodeCursor, drivingFilter, encodeCursor, FILTER_WINDOW, withoutBodies } from '../log-cursor'
import { BIN_SCALE, shapeStats } from '../log-stats'
import type { LogEntry } from '../../domain/log-entry'
import type { LogQuery, LogStats, LogStatsQuery, LogStore, SpendQuery } from '../types'
import { dimensionOf, groupKey, MAX_METADATA_VALUES, OTHER_VALUE, type RollupCell, rollup, type UsageQuery, type UsageSum } from '../usage-rollup'
import { StoreConflictError, StoreUnavailableError } from '../errors'
import { q } from './errors'

interface EntryRow {
  entry: string
  created_at: string | number
  request_id: string
  request_body?: string | null
  response_body?: string | null
}

const json = (v: unknown) => (v === undefined ? null : jsonText(v))

/** An escaped NUL (`\u0000`) in JSON text, not one whose backslash is itself escaped (`\\u0000`, the text "\u0000"). */
const NUL_ESCAPE = /(?<!\\)((?:\\\\)*)\\u0000/g

/**
 * Rows as JSON for PostgreSQL, whose text holds no NUL character (jsonb refuses `\u0000`: "unsupported
 * Unicode escape sequence"): one sent in a field the entry keeps as a column or a roll-up (a model name, a
 * metadata value) is U+FFFD there. The entry's own text keeps it escaped, so the entry reads back as it was; without
 * this the whole batch would be refused, and retried for ever behind it.
 */
function pgJson(rows: unknown): string {
  const text = JSON.stringify(rows)
  return text.includes('\\u0000') ? text.replace(NUL_ESCAPE, '$1\\ufffd') : text
}

/** Conditions joined by AND. */
const and = (sql: SQL, w: SQL.Query<unknown>[]) => w.reduce((acc, x) => sql`${acc} AND ${x}`)

/** Roll-up cells as usage_pending holds them: arrays in usage_daily's column order (read by usage_cells, migration 0005). */
const cellRows = (cells: RollupCell[]): string =>
  pgJson(cells.map((c) => [
    c.orgId, c.dim, c.day, c.value, c.requests, c.errors, c.tokens.input, c.tokens.cachedInput, c.tokens.cacheWrite,
    c.tokens.output, c.tokens.reasoning, c.costUsd, c.priced,
  ]))

/**
 * Writes entries in the caller's transaction; with a `cap`, what the rows really written sum to goes
 * to usage_pending as one row (an import passes none: it copies the source's roll-ups instead).
 * `skipTagConflicts`: tolerate tags already there, left by an entry deleted by hand (tags have no
 * foreign key since migration 0005); off by default, as checking costs about a fifth of the batch.
 */
export async function writeLogBatch(tx: SQL, entries: LogEntry[], cap: MetadataCap | undefined, skipTagConflicts = false): Promise<void> {
  const rows = entries.map((e) => ({
    request_id: e.requestId,
    org_id: e.orgId,
    created_at: Date.parse(e.createdAt),
    model: e.model,
    requested_model: e.requestedModel,
    status: e.status,
    end_user_id: e.endUserId,
    metadata: Object.fromEntries(Object.entries(e.metadata).map(([k, v]) => [k, String(v)])),
    entry: entryText(e, () => JSON.stringify(withoutBodies(e))),
    request_body: json(e.requestBody),
    response_body: json(e.responseBody),
    response_id: e.responseId ?? null,
  }))
  const rowsJson = pgJson(rows)
  // The roll-ups are summed as if every row were new (a batch is seldom written twice) and kept only
  // if so: a retried batch adds nothing twice.
  const cells = cap ? cellRows(await cap.apply(tx, rollup(entries))) : null
  // The whole batch as one jsonb parameter: one statement shape whatever the batch size, no
  // thousands of bound parameters to parse. Tags and roll-ups go in the same statement.
  const inserted = new Set(
    (
      await tx<{ request_id: string }[]>`
        WITH rows AS (
          INSERT INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, metadata, entry, request_body, response_body, response_id)
          SELECT * FROM jsonb_to_recordset(${rowsJson}::text::jsonb) AS r(request_id text, org_id text, created_at bigint, model text, requested_model text,
            status integer, end_user_id text, metadata jsonb, entry text, request_body text, response_body text, response_id text)
          ON CONFLICT (request_id) DO NOTHING RETURNING request_id, org_id, created_at, metadata
        ), tags AS (
          INSERT INTO request_log_tags (org_id, key, value, created_at, request_id)
          SELECT rows.org_id, m.key, m.value, rows.created_at, rows.request_id FROM rows, jsonb_each_text(rows.metadata) m
          ${skipTagConflicts ? tx`ON CONFLICT DO NOTHING` : tx``}
        ), pending AS (
          INSERT INTO usage_pending (cells) SELECT c FROM (SELECT ${cells}::text::jsonb AS c) s
          WHERE c IS NOT NULL AND (SELECT count(*) FROM rows) = ${entries.length}
        )
        SELECT request_id FROM rows`
    ).map((r) => r.request_id),
  )
  if (!cap || inserted.size === entries.length || !inserted.size) return
  // Some rows were there already: the roll-ups of those really written.
  const written = cellRows(await cap.apply(tx, rollup(entries.filter((e) => inserted.has(e.requestId)))))
  await tx`INSERT INTO usage_pending (cells) VALUES (${written}::text::jsonb)`
}

/**
 * Sums pending roll-up rows into usage_daily, one upsert per group, and deletes them, in one
 * statement: a pending row is folded once, by whichever instance takes it (SKIP LOCKED). Groups are
 * upserted in key order, so two instances folding at once wait for each other but never deadlock.
 */
export async function foldUsage(sql: SQL, maxBatches = 500): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    WITH p AS (
      DELETE FROM usage_pending WHERE id IN (SELECT id FROM usage_pending ORDER BY id LIMIT ${maxBatches} FOR UPDATE SKIP LOCKED) RETURNING cells
    ), s AS (
      SELECT c.org_id, c.dim, c.day, c.value, sum(c.requests)::bigint, sum(c.errors)::bigint, sum(c.input_tokens)::bigint,
        sum(c.cached_input_tokens)::bigint, sum(c.cache_write_tokens)::bigint, sum(c.output_tokens)::bigint,
        sum(c.reasoning_tokens)::bigint, sum(c.cost_usd), sum(c.priced)::bigint
      FROM p, usage_cells(p.cells) c
      GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ), up AS (
      INSERT INTO usage_daily SELECT * FROM s
      ON CONFLICT (org_id, dim, day, value) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
        errors = usage_daily.errors + excluded.errors, input_tokens = usage_daily.input_tokens + excluded.input_tokens,
        cached_input_tokens = usage_daily.cached_input_tokens + excluded.cached_input_tokens,
        cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
        output_tokens = usage_daily.output_tokens + excluded.output_tokens, reasoning_tokens = usage_daily.reasoning_tokens + excluded.reasoning_tokens,
        cost_usd = usage_daily.cost_usd + excluded.cost_usd, priced = usage_daily.priced + excluded.priced
    )
    SELECT count(*)::int AS n FROM p`
  return Number(row?.n ?? 0)
}

/**
 * Past MAX_METADATA_VALUES distinct values of one metadata key per org and day, a new value is
 * rolled up under OTHER_VALUE (as in SQLite). The values of a key and day are read from the
 * database once per process, then followed in memory; two instances adding new values at the same
 * time may pass the bound by a few (it only bounds growth).
 */
export class MetadataCap {
  /** Per org/key/day: the values already rolled up. */
  private readonly groups = new Map<string, Set<string>>()

  async apply(tx: SQL, cells: RollupCell[]): Promise<RollupCell[]> {
    const meta = cells.filter((c) => c.dim.startsWith('metadata.'))
    if (!meta.length) return cells
    const unknown = [...new Map(meta.filter((c) => !this.groups.has(groupOf(c))).map((c) => [groupOf(c), c])).values()]
    if (unknown.length) {
      if (this.groups.size > 10_000) this.groups.clear()
      for (const c of unknown) this.groups.set(groupOf(c), new Set())
      const rows = await tx<{ org_id: string; dim: string; day: string; value: string }[]>`
        SELECT u.org_id, u.dim, u.day, u.value
        FROM usage_daily u JOIN jsonb_to_recordset(${pgJson(unknown.map((c) => ({ org_id: c.orgId, dim: c.dim, day: c.day })))}::text::jsonb)
          AS g(org_id text, dim text, day text) ON u.org_id = g.org_id AND u.dim = g.dim AND u.day = g.day`
      for (const r of rows) this.groups.get(`${r.org_id}\u0000${r.dim}\u0000${r.day}`)?.add(r.value)
    }
    const out = new Map<string, RollupCell>()
    for (const c of cells) {
      if (c.dim.startsWith('metadata.')) {
        const values = this.groups.get(groupOf(c)) as Set<string>
        if (!values.has(c.value)) {
          if (values.size >= MAX_METADATA_VALUES) c.value = OTHER_VALUE
          else values.add(c.value)
        }
      }
      // Cells folded into OTHER_VALUE are summed, so the INSERT names each row once.
      const id = `${groupOf(c)}\u0000${c.value}`
      const prev = out.get(id)
      if (!prev) out.set(id, c)
      else {
        prev.requests += c.requests
        prev.errors += c.errors
        prev.costUsd += c.costUsd
        prev.priced += c.priced
        for (const k of Object.keys(prev.tokens) as (keyof RollupCell['tokens'])[]) prev.tokens[k] += c.tokens[k]
      }
    }
    return [...out.values()]
  }
}

const groupOf = (c: RollupCell) => `${c.orgId}\u0000${c.dim}\u0000${c.day}`

/** Pending roll-ups are folded into usage_daily at most this often per instance (reports read both meanwhile). */
const FOLD_EVERY_MS = 1000
/** Entries of each tag read (newest first) to choose which tag of a filter drives the scan. */
const TAG_SAMPLE = 200

export class PgLogStore implements LogStore {
  /** Two batches in flight: one is built and sent while the database writes and commits the other. */
  readonly writeConcurrency = 2
  private readonly cap = new MetadataCap()
  private folding: Promise<unknown> | undefined
  private foldedAt = 0

  /** `ready`: migrations are done; until then batches are refused as unreachable (so they are spooled). */
  constructor(
    private readonly sql: SQL,
    private readonly ready: () => boolean = () => true,
  ) {}

  /**
   * One multi-row INSERT per batch, its roll-ups in the same statement; a request id already stored
   * is skipped, so a retried batch (or one partly written before) never duplicates and never counts twice.
   */
  async insertLogs(entries: LogEntry[]): Promise<void> {
    if (!entries.length) return
    if (!this.ready()) throw new StoreUnavailableError('the database has not been migrated yet')
    try {
      await q(this.sql.begin((tx) => writeLogBatch(tx, entries, this.cap)), 'a log tag')
    } catch (err) {
      if (!(err instanceof StoreConflictError)) throw err
      await q(this.sql.begin((tx) => writeLogBatch(tx, entries, this.cap, true)))
    }
    if (!this.folding && performance.now() - this.foldedAt >= FOLD_EVERY_MS) {
      this.foldedAt = performance.now()
      // Off the writer's path; a fold that fails leaves its rows pending (still counted) for the next.
      this.folding = foldUsage(this.sql)
        .catch(() => {})
        .finally(() => {
          this.folding = undefined
        })
    }
  }

  /** Folds every pending roll-up now (tests; instances fold on their own as they write). */
  async foldPending(): Promise<void> {
    await this.folding
    while ((await q(foldUsage(this.sql))) > 0) {}
  }

  async pruneLogs(before: number, limit: number): Promise<number> {
    const [row] = await q<{ n: number }[]>(this.sql`
      WITH gone AS (
        DELETE FROM request_logs WHERE request_id IN
          (SELECT request_id FROM request_logs WHERE created_at < ${before} ORDER BY created_at LIMIT ${limit})
        RETURNING request_id, org_id, created_at, metadata
      ), tags AS (
        DELETE FROM request_log_tags t USING gone, jsonb_each_text(gone.metadata) m
        WHERE t.org_id = gone.org_id AND t.key = m.key AND t.value = m.value AND t.created_at = gone.created_at AND t.request_id = gone.request_id
      )
      SELECT count(*)::int AS n FROM gone`)
    return Number(row?.n ?? 0)
  }

  async usage(uq: UsageQuery): Promise<UsageSum[]> {
    const { dim, byDay } = dimensionOf(uq.groupBy)
    const sql = this.sql
    const rows = await q<Record<string, string | number>[]>(sql`
      SELECT ${byDay ? sql`day` : sql`value`} AS key, sum(requests)::float8 AS requests, sum(errors)::float8 AS errors,
        sum(input_tokens)::float8 AS input, sum(cached_input_tokens)::float8 AS cached, sum(cache_write_tokens)::float8 AS written,
        sum(output_tokens)::float8 AS output, sum(reasoning_tokens)::float8 AS reasoning, sum(cost_usd) AS cost, sum(priced)::float8 AS priced
      FROM usage_all WHERE org_id = ${uq.orgId} AND dim = ${dim} AND day >= ${uq.fromDay} AND day <= ${uq.toDay}
      GROUP BY 1 ORDER BY ${byDay ? sql`1` : sql`cost DESC, requests DESC, 1`}`)
    return rows.map((r) => ({
      key: byDay ? String(r.key) : groupKey(dim, String(r.key)),
      priced: Number(r.priced),
      requests: Number(r.requests),
      errors: Number(r.errors),
      tokens: { input: Number(r.input), cachedInput: Number(r.cached), cacheWrite: Number(r.written), output: Number(r.output), reasoning: Number(r.reasoning) },
      costUsd: Number(r.priced) > 0 ? Math.round(Number(r.cost) * 1e9) / 1e9 : null,
    }))
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

  async getLogByResponseId(orgId: string, responseId: string): Promise<LogEntry | undefined> {
    const [row] = await q<{ request_id: string }[]>(this.sql`
      SELECT request_id FROM request_logs WHERE org_id = ${orgId} AND response_id = ${responseId}`)
    return row ? this.getLog(orgId, row.request_id) : undefined
  }

  async queryLogs(lq: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }> {
    const sql = this.sql
    const cursor = lq.cursor ? decodeCursor(lq.cursor) : undefined
    /** The time range and cursor, on the table whose time order is read. */
    const bounds = (t: SQL.Query<unknown>) => {
      const w: SQL.Query<unknown>[] = []
      if (lq.since !== undefined) w.push(sql`${t}.created_at >= ${lq.since}`)
      if (lq.until !== undefined) w.push(sql`${t}.created_at < ${lq.until}`)
      if (cursor) w.push(sql`(${t}.created_at, ${t}.request_id) < (${cursor.createdAt}, ${cursor.requestId})`)
      return w
    }
    // Every filter is checked on the window's entries (the driving one again, at no cost worth counting).
    const onEntry: SQL.Query<unknown>[] = []
    if (lq.model) onEntry.push(sql`(l.model = ${lq.model} OR l.requested_model = ${lq.model})`)
    if (lq.status === 'success') onEntry.push(sql`l.status < 400`)
    else if (lq.status === 'error') onEntry.push(sql`l.status >= 400`)
    else if (typeof lq.status === 'number') onEntry.push(sql`l.status = ${lq.status}`)
    if (lq.user) onEntry.push(sql`l.end_user_id = ${lq.user}`)
    if (lq.provider) onEntry.push(sql`l.entry::jsonb->>'provider' = ${lq.provider}`)
    /** A range of one request_logs index, newest first, without its LIMIT. */
    const logs = (...where: SQL.Query<unknown>[]) => sql`SELECT t0.created_at, t0.request_id FROM request_logs t0
      WHERE ${and(sql, [sql`t0.org_id = ${lq.orgId}`, ...where, ...bounds(sql`t0`)])} ORDER BY t0.created_at DESC, t0.request_id DESC`
    let window: SQL.Query<unknown>
    let lookups: SQL.Query<unknown>[] = []
    switch (drivingFilter(lq)) {
      case 'metadata': {
        const tags = await this.rarestFirst(lq.orgId, lq.metadata, bounds)
        if (!tags) return { data: [], nextCursor: null }
        // The rarest tag drives the scan (an index range in time order); each other tag is a point
        // lookup on its whole primary key. The lookup is a scalar subquery, not EXISTS: EXISTS becomes
        // a semi-join, and without statistics (a fresh table) the planner may then scan the other tag's
        // whole range for every row.
        const [[k0, v0], ...others] = tags as [[string, string], ...[string, string][]]
        window = sql`SELECT t0.created_at, t0.request_id FROM request_log_tags t0
          WHERE ${and(sql, [sql`t0.org_id = ${lq.orgId} AND t0.key = ${k0} AND t0.value = ${v0}`, ...bounds(sql`t0`)])}
          ORDER BY t0.created_at DESC, t0.request_id DESC`
        lookups = others.map(
          ([k, v]) => sql`(SELECT true FROM request_log_tags tn WHERE tn.org_id = ${lq.orgId} AND tn.key = ${k} AND tn.value = ${v}
            AND tn.created_at = t0.created_at AND tn.request_id = t0.request_id)`,
        )
        break
      }
      case 'user':
        window = logs(sql`t0.end_user_id = ${lq.user}`)
        break
      case 'model':
        // The answering or the requested model: the newest window of each index, merged.
        window = sql`(${logs(sql`t0.model = ${lq.model}`)} LIMIT ${FILTER_WINDOW})
          UNION (${logs(sql`t0.requested_model = ${lq.model}`)} LIMIT ${FILTER_WINDOW}) ORDER BY 1 DESC, 2 DESC`
        break
      case 'status':
        window = logs(sql`t0.status = ${lq.status}`)
        break
      case 'outcome':
        window = logs(sql`(t0.status >= 400) = ${lq.status === 'error'}`)
        break
      case 'time':
        window = logs()
    }
    // At most FILTER_WINDOW entries of the driving filter per page, newest first. The window is a
    // subquery of its own (LIMIT, or OFFSET 0, keeps it from being merged), so the entry's own
    // filters never move the lookups; each entry is then read by its key in that order (OFFSET 0
    // keeps the lateral subquery a lookup, not a hash join over the whole table).
    const rows = await q<EntryRow[]>(sql`
      SELECT l.entry, t.created_at, t.request_id FROM (
        SELECT t0.created_at, t0.request_id FROM (${window} LIMIT ${FILTER_WINDOW}) t0 ${lookups.length ? sql`WHERE ${and(sql, lookups)}` : sql``}
        ORDER BY t0.created_at DESC, t0.request_id DESC ${onEntry.length ? sql`OFFSET 0` : sql`LIMIT ${lq.limit + 1}`}
      ) t CROSS JOIN LATERAL (
        SELECT l.entry FROM request_logs l WHERE ${and(sql, [sql`l.request_id = t.request_id`, ...onEntry])} OFFSET 0
      ) l
      ORDER BY t.created_at DESC, t.request_id DESC LIMIT ${lq.limit + 1}`)
    let windowEdge: string | null = null
    if (rows.length <= lq.limit) {
      // The page looked at a whole window: older entries may still match, from its edge on.
      const [edge] = await q<{ created_at: string; request_id: string }[]>(sql`${window} LIMIT 1 OFFSET ${FILTER_WINDOW - 1}`)
      if (edge) windowEdge = encodeCursor(Number(edge.created_at), edge.request_id)
    }
    const page = rows.slice(0, lq.limit)
    const last = page[page.length - 1]
    return {
      data: page.map((r) => JSON.parse(r.entry) as LogEntry),
      nextCursor: rows.length > lq.limit && last ? encodeCursor(Number(last.created_at), last.request_id) : windowEdge,
    }
  }

  /**
   * A filter's tags, sparsest first, undefined when one has no entry in range (so a filter that
   * matches nothing walks nothing). One round trip reads each tag's newest TAG_SAMPLE entries from
   * the index: a tag with fewer is rare (fewest first); among the others, the one whose
   * TAG_SAMPLE-th newest entry is oldest is the sparsest where a page starts, the newest end.
   */
  private async rarestFirst(
    orgId: string,
    tags: readonly [string, string][],
    bounds: (t: SQL.Query<unknown>) => SQL.Query<unknown>[],
  ): Promise<[string, string][] | undefined> {
    if (tags.length === 1) return [...tags]
    const sql = this.sql
    const samples = tags.map(
      ([k, v]) => sql`(SELECT json_build_array(count(*), min(created_at)) FROM (SELECT t.created_at FROM request_log_tags t
        WHERE ${and(sql, [sql`t.org_id = ${orgId} AND t.key = ${k} AND t.value = ${v}`, ...bounds(sql`t`)])}
        ORDER BY t.created_at DESC, t.request_id DESC LIMIT ${TAG_SAMPLE}) s)`,
    )
    const [row] = await q<{ s: string }[]>(sql`SELECT json_build_array(${samples.reduce((acc, c) => sql`${acc}, ${c}`)})::text AS s`)
    const seen = JSON.parse(row?.s ?? '[]') as [number, number | null][]
    if (seen.some(([n]) => n === 0)) return undefined
    const rank = ([n, oldest]: [number, number | null]) => (n < TAG_SAMPLE ? n - TAG_SAMPLE : Number(oldest))
    return tags
      .map((t, i) => ({ t, r: rank(seen[i] ?? [0, null]) }))
      .sort((a, b) => a.r - b.r)
      .map((x) => x.t)
  }

  /** The dashboard's overview figures, grouped in the database and shaped like SQLite's (src/store/log-stats.ts). */
  async stats(sq: LogStatsQuery): Promise<LogStats> {
    const sql = this.sql
    const key = sq.by === 'model' ? sql`model` : sql`entry::jsonb->>'provider'`
    const bin = (field: string) => sql`round(ln((entry::jsonb->>${field})::float8 + 1) / ln(2) * ${BIN_SCALE})::int`
    const rows = await q<Record<string, string | number | null>[]>(sql`
      SELECT ((created_at - ${sq.since}) / ${sq.bucketMs})::int AS bucket, ${key} AS key, ${bin('latencyMs')} AS lat, ${bin('ttftMs')} AS ttft,
        count(*)::int AS n, sum((status >= 400)::int)::int AS errors,
        sum(coalesce((entry::jsonb->'usage'->>'promptTokens')::float8, 0) + coalesce((entry::jsonb->'usage'->>'completionTokens')::float8, 0)) AS tokens,
        coalesce(sum((entry::jsonb->>'costUsd')::float8), 0) AS cost
      FROM request_logs WHERE org_id = ${sq.orgId} AND created_at >= ${sq.since} AND created_at < ${sq.until}
      GROUP BY 1, 2, 3, 4`)
    return shapeStats(
      sq,
      rows.map((r) => ({
        bucket: Number(r.bucket),
        key: r.key === null ? null : String(r.key),
        lat: Number(r.lat ?? 0),
        ttft: r.ttft === null ? null : Number(r.ttft),
        n: Number(r.n),
        errors: Number(r.errors),
        tokens: Number(r.tokens),
        cost: Number(r.cost),
      })),
    )
  }

  async spend(sq: SpendQuery): Promise<number> {
    const [row] = await q<{ usd: number | null }[]>(this.sql`
      SELECT sum(cost_usd) AS usd FROM usage_all
      WHERE org_id = ${sq.orgId} AND dim = ${sq.dim} AND value = ${sq.value} AND day >= ${sq.fromDay} AND day <= ${sq.toDay}`)
    return Number(row?.usd ?? 0)
  }

  async countLogs(orgId?: string): Promise<number> {
    const [row] = await q<{ n: string }[]>(
      orgId ? this.sql`SELECT count(*) AS n FROM request_logs WHERE org_id = ${orgId}` : this.sql`SELECT count(*) AS n FROM request_logs`,
    )
    return Number(row?.n ?? 0)
  }
}
