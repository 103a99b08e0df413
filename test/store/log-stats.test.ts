// The dashboard's stats report on SQLite: buckets, series per model or provider, approximate percentiles, and
// migration 0007 filling the figure columns of entries written before it.

import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { createSqliteStore } from '../../src/store/sqlite'
import { MIGRATIONS, openDatabase } from '../../src/store/sqlite/open'
import { logEntry } from '../helpers/log-entry'
import logFigures from '../../src/store/sqlite/migrations/0007_log_figures.sql' with { type: 'text' }

const T0 = 1_700_000_000_000
const HOUR = 3_600_000

test('buckets, series and percentiles within 10 % of the exact values', async () => {
  const store = createSqliteStore(':memory:', new SecretBox('stats-test'))
  const entries = []
  // Hour 0: 1,000 requests with latencies 1..1000 ms, every 10th an error, streams with TTFT = latency / 4.
  for (let i = 1; i <= 1000; i++)
    entries.push(
      logEntry(i, {
        createdAt: new Date(T0 + i).toISOString(),
        latencyMs: i,
        stream: i % 2 === 0,
        ttftMs: i % 2 === 0 ? i / 4 : null,
        status: i % 10 === 0 ? 502 : 200,
        model: i <= 600 ? 'openai/gpt-4o' : 'anthropic/claude-sonnet-4-5',
        provider: i <= 600 ? 'openai' : 'anthropic',
        costUsd: i <= 600 ? 0.001 : null,
      }),
    )
  // Hour 2: one slow request.
  entries.push(logEntry(2000, { createdAt: new Date(T0 + 2 * HOUR + 5).toISOString(), latencyMs: 30_000 }))
  await store.logs.insertLogs(entries)
  const stats = await store.logs.stats({ orgId: 'o1', since: T0, until: T0 + 3 * HOUR, bucketMs: HOUR, by: 'model' })
  expect(stats.buckets).toEqual([T0, T0 + HOUR, T0 + 2 * HOUR])
  expect(stats.series.map((s) => s.key)).toEqual(['openai/gpt-4o', 'anthropic/claude-sonnet-4-5'])
  const [gpt, claude] = stats.series as [(typeof stats.series)[number], (typeof stats.series)[number]]
  expect(gpt.requests).toEqual([600, 0, 1])
  expect(claude.requests).toEqual([400, 0, 0])
  expect(gpt.errors[0] as number).toBe(60)
  expect(claude.errors[0] as number).toBe(40)
  expect(gpt.tokens[0] as number).toBe(1200)
  expect(gpt.costUsd[0] as number).toBeCloseTo(0.6, 9)
  expect(claude.costUsd[0] as number).toBe(0) // unknown prices add nothing
  const near = (got: number | null, want: number) => {
    expect(got).not.toBeNull()
    expect(Math.abs((got as number) - want) / want).toBeLessThan(0.1)
  }
  near(stats.latencyMs.p50[0] as number, 500)
  near(stats.latencyMs.p95[0] as number, 950)
  near(stats.ttftMs.p50[0] as number, 125)
  near(stats.ttftMs.p95[0] as number, 237.5)
  expect(stats.latencyMs.p50[1]).toBeNull()
  near(stats.latencyMs.p95[2] as number, 30_000)
  expect(stats.ttftMs.p95[2]).toBeNull()
  const byProvider = await store.logs.stats({ orgId: 'o1', since: T0, until: T0 + 3 * HOUR, bucketMs: HOUR, by: 'provider' })
  expect(byProvider.series.map((s) => [s.key, s.requests[0]])).toEqual([['openai', 600], ['anthropic', 400]])
  expect((await store.logs.stats({ orgId: 'other', since: T0, until: T0 + HOUR, bucketMs: HOUR, by: 'model' })).series).toEqual([])
  await store.close()
})

test('migration 0007 fills the figure columns of entries already in the database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-mig-'))
  try {
    const path = join(dir, 'gw.db')
    // A database at the schema before 0007 (every migration before it), with one entry written then.
    const db = new Database(path, { create: true, strict: true })
    const before = MIGRATIONS.indexOf(logFigures)
    for (const m of MIGRATIONS.slice(0, before)) db.exec(m)
    db.exec(`PRAGMA user_version = ${before}`)
    const e = logEntry(1, { latencyMs: 321, ttftMs: 45, provider: 'mistral', costUsd: 0.5, usage: { ...logEntry(1).usage, promptTokens: 10, cachedTokens: 4, completionTokens: 7 } })
    db.query('INSERT INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, entry) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)').run(
      e.requestId, e.orgId, Date.parse(e.createdAt), e.model, e.requestedModel, e.status, e.endUserId, JSON.stringify(e),
    )
    db.close()
    const again = openDatabase(path)
    expect(again.query('SELECT provider, key_id, latency_ms, ttft_ms, prompt_tokens, cached_tokens, completion_tokens, cost_usd FROM request_logs').get()).toEqual({
      provider: 'mistral', key_id: 'sk_x', latency_ms: 321, ttft_ms: 45, prompt_tokens: 10, cached_tokens: 4, completion_tokens: 7, cost_usd: 0.5,
    })
    again.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
