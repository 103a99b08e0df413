// Daily usage roll-ups and log retention in the SQLite store: sums by every group, idempotent
// batches, pruning that keeps roll-ups, and the migration that rolls up entries logged before it.

import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { SecretBox } from '../../src/crypto/secret-box'
import { createSqliteStore } from '../../src/store/sqlite'
import { MIGRATIONS, migrate } from '../../src/store/sqlite/open'
import type { Store } from '../../src/store/types'
import { logEntry } from '../helpers/log-entry'

const DAY = 86_400_000
const T0 = Date.parse('2026-11-20T10:00:00Z')

function fresh(): Store {
  return createSqliteStore(':memory:', new SecretBox('usage-retention-test-secret-0123456789'))
}

/** Six requests over two days, two models, two keys, one failure, one unpriced, one end user. */
function sample() {
  const at = (ms: number) => new Date(ms).toISOString()
  const usage = (p: number, c: number, cached = 0, written = 0, reasoning = 0) => ({
    promptTokens: p,
    completionTokens: c,
    totalTokens: p + c,
    cachedTokens: cached,
    cacheWriteTokens: written,
    reasoningTokens: reasoning,
    estimated: false,
  })
  return [
    logEntry(1, { createdAt: at(T0), usage: usage(100, 10, 40), costUsd: 0.001, metadata: { feature: 'chat' } }),
    logEntry(2, { createdAt: at(T0 + 1000), usage: usage(200, 20, 0, 50, 5), costUsd: 0.002, subject: 'sk_y', metadata: { feature: 'search' } }),
    logEntry(3, { createdAt: at(T0 + 2000), status: 502, usage: usage(0, 0), costUsd: null, metadata: { feature: 'chat' } }),
    logEntry(4, {
      createdAt: at(T0 + DAY),
      model: 'anthropic/claude-haiku-4-5',
      provider: 'anthropic',
      usage: usage(300, 30, 100, 0, 10),
      costUsd: 0.003,
      endUserId: 'u-7',
      metadata: {},
    }),
    logEntry(5, { createdAt: at(T0 + DAY + 1000), model: 'openai/unpriced', usage: usage(10, 1), costUsd: null, metadata: {} }),
    logEntry(6, { createdAt: at(T0 + DAY + 2000), usage: usage(50, 5), costUsd: 0.0005, authMode: 'GwSigned', subject: 'alice', metadata: {} }),
  ]
}

const q = (groupBy: string) => ({ orgId: 'o1', groupBy: groupBy as 'day', fromDay: '2026-11-01', toDay: '2026-11-30' })

describe('usage roll-ups', () => {
  test('group sums match the entries, token kinds disjoint, unknown cost null, other orgs apart', async () => {
    const store = fresh()
    await store.logs.insertLogs(sample())
    await store.logs.insertLogs([logEntry(9, { orgId: 'o2', createdAt: new Date(T0).toISOString(), costUsd: 5 })])

    expect(await store.logs.usage(q('day'))).toEqual([
      {
        key: '2026-11-20',
        priced: 2,
        requests: 3,
        errors: 1,
        tokens: { input: 100 - 40 + 200 - 50, cachedInput: 40, cacheWrite: 50, output: 10 + 15, reasoning: 5 },
        costUsd: 0.003,
      },
      {
        key: '2026-11-21',
        priced: 2,
        requests: 3,
        errors: 0,
        tokens: { input: 200 + 10 + 50, cachedInput: 100, cacheWrite: 0, output: 20 + 1 + 5, reasoning: 10 },
        costUsd: 0.0035,
      },
    ])
    const byModel = await store.logs.usage(q('model'))
    expect(byModel.map((r) => [r.key, r.requests, r.costUsd, r.priced])).toEqual([
      ['openai/gpt-4o', 4, 0.0035, 3],
      ['anthropic/claude-haiku-4-5', 1, 0.003, 1],
      ['openai/unpriced', 1, null, 0],
    ])
    expect((await store.logs.usage(q('key'))).map((r) => [r.key, r.requests])).toEqual([
      ['sk_x', 4],
      ['sk_y', 1],
      ['GwSigned', 1],
    ])
    expect((await store.logs.usage(q('endUser'))).map((r) => [r.key, r.requests])).toEqual([
      [null, 5],
      ['u-7', 1],
    ])
    expect((await store.logs.usage(q('metadata.feature'))).map((r) => [r.key, r.requests, r.errors])).toEqual([
      ['search', 1, 0],
      ['chat', 2, 1],
    ])
    expect(await store.logs.usage({ ...q('day'), fromDay: '2026-11-21', toDay: '2026-11-21' })).toHaveLength(1)
    expect((await store.logs.usage({ ...q('day'), orgId: 'o2' }))[0]).toMatchObject({ requests: 1, costUsd: 5 })
    await store.close()
  })

  test('a metadata key with more than 1,000 values a day sums the rest under "(other)"', async () => {
    const store = fresh()
    const at = new Date(T0).toISOString()
    const many = Array.from({ length: 1005 }, (_, i) => logEntry(i, { createdAt: at, metadata: { trace: `t-${i}` } }))
    await store.logs.insertLogs(many.slice(0, 600))
    await store.logs.insertLogs(many.slice(600))
    // A value already rolled up keeps its own row.
    await store.logs.insertLogs([logEntry(5000, { createdAt: at, metadata: { trace: 't-7' } })])
    const rows = await store.logs.usage({ ...q('metadata.trace'), fromDay: '2026-11-20', toDay: '2026-11-20' })
    expect(rows).toHaveLength(1001)
    expect(rows.find((r) => r.key === '(other)')?.requests).toBe(5)
    expect(rows.find((r) => r.key === 't-7')?.requests).toBe(2)
    expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(1006)
    await store.close()
  })

  test('a batch written twice (a retry) is counted once', async () => {
    const store = fresh()
    const entries = sample()
    await store.logs.insertLogs(entries)
    await store.logs.insertLogs(entries.slice(2))
    const days = await store.logs.usage(q('day'))
    expect(days.map((d) => d.requests)).toEqual([3, 3])
    await store.close()
  })
})

describe('retention', () => {
  test('pruning deletes old entries with their bodies and tags in batches, and keeps the roll-ups', async () => {
    const store = fresh()
    const entries = sample().map((e) => ({ ...e, requestBody: { big: 'x'.repeat(100) } }))
    await store.logs.insertLogs(entries)
    const before = await store.logs.usage(q('day'))
    // Everything of the first day, two at a time.
    const cutoff = T0 + DAY - 1
    expect(await store.logs.pruneLogs(cutoff, 2)).toBe(2)
    expect(await store.logs.pruneLogs(cutoff, 2)).toBe(1)
    expect(await store.logs.pruneLogs(cutoff, 2)).toBe(0)
    expect(await store.logs.countLogs('o1')).toBe(3)
    expect(await store.logs.getLog('o1', 'req-000001')).toBeUndefined()
    expect(await store.logs.getLog('o1', 'req-000004')).toMatchObject({ requestId: 'req-000004', requestBody: { big: expect.any(String) } })
    // The tag index no longer finds pruned entries.
    expect((await store.logs.queryLogs({ orgId: 'o1', metadata: [['feature', 'chat']], limit: 10 })).data).toEqual([])
    expect(await store.logs.usage(q('day'))).toEqual(before)
    await store.close()
  })
})

test('the roll-up migration sums the entries logged before it', () => {
  const db = new Database(':memory:', { strict: true })
  for (const m of MIGRATIONS.slice(0, 3)) db.exec(m)
  db.exec('PRAGMA user_version = 3')
  const insert = db.query('INSERT INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, entry) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)')
  const tag = db.query('INSERT INTO request_log_metadata (org_id, key, value, created_at, request_id) VALUES (?1, ?2, ?3, ?4, ?5)')
  for (const e of sample()) {
    // Entries logged before this version had no cache-write or reasoning counts.
    const { cacheWriteTokens: _w, reasoningTokens: _r, ...oldUsage } = e.usage
    const at = Date.parse(e.createdAt)
    insert.run(e.requestId, e.orgId, at, e.model, e.requestedModel, e.status, e.endUserId, JSON.stringify({ ...e, usage: oldUsage }))
    for (const [k, v] of Object.entries(e.metadata)) tag.run(e.orgId, k, String(v), at, e.requestId)
  }
  migrate(db)
  const rows = db
    .query<{ dim: string; value: string; requests: number; errors: number; input_tokens: number; cost_usd: number; priced: number }, []>(
      "SELECT dim, value, requests, errors, input_tokens, cost_usd, priced FROM usage_daily WHERE day = '2026-11-20' ORDER BY dim, value",
    )
    .all()
  expect(rows).toEqual([
    { dim: '', value: '', requests: 3, errors: 1, input_tokens: 60 + 200, cost_usd: 0.003, priced: 2 },
    { dim: 'endUser', value: '', requests: 3, errors: 1, input_tokens: 260, cost_usd: 0.003, priced: 2 },
    { dim: 'key', value: 'sk_x', requests: 2, errors: 1, input_tokens: 60, cost_usd: 0.001, priced: 1 },
    { dim: 'key', value: 'sk_y', requests: 1, errors: 0, input_tokens: 200, cost_usd: 0.002, priced: 1 },
    { dim: 'metadata.feature', value: 'chat', requests: 2, errors: 1, input_tokens: 60, cost_usd: 0.001, priced: 1 },
    { dim: 'metadata.feature', value: 'search', requests: 1, errors: 0, input_tokens: 200, cost_usd: 0.002, priced: 1 },
    { dim: 'model', value: 'openai/gpt-4o', requests: 3, errors: 1, input_tokens: 260, cost_usd: 0.003, priced: 2 },
    { dim: 'provider', value: 'openai', requests: 3, errors: 1, input_tokens: 260, cost_usd: 0.003, priced: 2 },
  ])
  db.close()
})
