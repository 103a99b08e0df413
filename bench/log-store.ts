// Log store benchmark pieces: realistic entries, the writer's sustained rate, and seeding a database with N entries.

import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { hashKey, serviceKeyId } from '../src/auth/service-keys'
import { SecretBox } from '../src/crypto/secret-box'
import { withoutBodies } from '../src/store/log-cursor'
import { LogPath } from '../src/store/log-path'
import { LogWriter } from '../src/store/log-writer'
import { createSqliteStore } from '../src/store/sqlite'
import type { LogEntry } from '../src/domain/log-entry'
import type { Store } from '../src/store/types'

export const FEATURES = 50
export const TIERS = ['free', 'pro', 'team', 'enterprise', 'internal']

/** A log entry shaped like a real one: attempts, usage, three metadata tags, small bodies. */
export function entry(i: number, createdAt: number): LogEntry {
  const id = `01bench-${i.toString(16).padStart(10, '0')}`
  return {
    requestId: id,
    createdAt: new Date(createdAt).toISOString(),
    orgId: 'default',
    endpoint: '/v1/chat/completions',
    authMode: 'GwKey',
    subject: 'sk_bench',
    endUserId: `user-${i % 5000}`,
    user: `user-${i % 5000}`,
    promptId: null,
    promptSlug: null,
    promptVersion: null,
    requestedModel: 'openai/gpt-4o-mini',
    route: null,
    providerKey: null,
    model: 'openai/gpt-4o-mini',
    provider: 'openai',
    stream: i % 2 === 0,
    status: i % 50 === 0 ? 502 : 200,
    errorCode: i % 50 === 0 ? 'provider_error' : null,
    errorMessage: null,
    fallback: { used: false, reason: null, model: null },
    attempts: [{ model: 'openai/gpt-4o-mini', outcome: 'ok', status: 200, latencyMs: 412 }],
    usage: { promptTokens: 120, completionTokens: 48, totalTokens: 168, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false },
    costUsd: 0.0000468,
    priceVersion: '2026-11-23',
    latencyMs: 430,
    upstreamLatencyMs: 412,
    ttftMs: 180,
    incomplete: false,
    refusal: false,
    warnings: [],
    metadata: { feature: `f${i % FEATURES}`, tier: TIERS[i % TIERS.length] as string, run: i },
    structuredOutput: null,
    requestBody: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `question number ${i} about the product` }] },
    responseBody: { id: `chatcmpl-${i}`, choices: [{ message: { role: 'assistant', content: 'an answer of a few words' } }] },
  }
}

/** GW_SECRET of every gw the benchmarks start (gw takes 32 characters or more). */
export const BENCH_SECRET = 'gw-bench-secret-0123456789abcdef0123'

export function openBenchStore(path: string): Store {
  return createSqliteStore(path, new SecretBox(BENCH_SECRET))
}

/** Entries per second the writer sustains: `n` entries queued as fast as they come, until all are on disk. */
export async function writerRate(path: string, n: number): Promise<number> {
  rmSync(path, { force: true })
  const store = openBenchStore(path)
  const writer = new LogWriter(store.logs)
  const t0 = performance.now()
  const now = Date.now()
  for (let i = 0; i < n; i++) {
    writer.write(entry(i, now + i))
    if (i % 5000 === 4999) await Bun.sleep(0) // let the writer's timer run, as a busy server would
  }
  await writer.flush()
  const rate = n / ((performance.now() - t0) / 1000)
  await writer.close()
  await store.close()
  return rate
}

/**
 * Entries per second through the log path (`deps.logs`): handed over as a request does (the entry
 * without bodies, the bodies as JSON text), built and written by the log thread on its own
 * connection, until all are on disk; with the serving thread's CPU per entry (µs, schedstat).
 */
export async function logPathRate(path: string, n: number): Promise<{ perSecond: number; servingUsPerEntry: number }> {
  rmSync(path, { force: true })
  const store = openBenchStore(path)
  const logs = LogPath.thread({ kind: 'sqlite', path }, { bodyMaxBytes: 64 * 1024 })
  const now = Date.now()
  const items = Array.from({ length: n }, (_, i) => {
    const e = entry(i, now + i)
    return { head: withoutBodies(e) as LogEntry, request: JSON.stringify(e.requestBody), response: JSON.stringify(e.responseBody) }
  })
  const servingNs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0])
  const t0 = performance.now()
  // The serving thread's CPU is counted over the hand-overs only (1,000 at a time), not the waits for room.
  let serving = 0
  for (let i = 0; i < n; i += 1000) {
    const c0 = servingNs()
    const rooms: Promise<void>[] = []
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      const it = items[j] as (typeof items)[number]
      const room = logs.record(it.head, { request: { text: it.request, bytes: it.request.length }, response: { text: it.response } })
      if (room) rooms.push(room)
    }
    serving += servingNs() - c0
    await Promise.all(rooms)
    if (i % 5000 === 4000) await Bun.sleep(0)
  }
  while (logs.queued > 0) await logs.flush()
  const perSecond = n / ((performance.now() - t0) / 1000)
  await logs.close()
  await store.close()
  return { perSecond, servingUsPerEntry: Math.round((serving / 1000 / n) * 10) / 10 }
}

/** A database with the default org, a service key and `n` entries spread over the last 30 days (bodies left out when `bodies` is false). */
export async function seed(path: string, n: number, serviceKey: string, bodies = true): Promise<void> {
  rmSync(path, { force: true })
  const store = openBenchStore(path)
  await store.orgs.createOrg({ id: 'default', name: 'Default' })
  await store.keys.createServiceKey({ id: serviceKeyId(serviceKey), orgId: 'default', name: 'bench', hash: hashKey(serviceKey) })
  const span = 30 * 24 * 3600 * 1000
  const start = Date.now() - span
  const batch = 10_000
  for (let i = 0; i < n; i += batch) {
    const entries: LogEntry[] = []
    for (let j = i; j < Math.min(n, i + batch); j++) {
      const e = entry(j, start + Math.floor((j / n) * span))
      if (!bodies) {
        delete e.requestBody
        delete e.responseBody
      }
      entries.push(e)
    }
    await store.logs.insertLogs(entries)
  }
  await store.close()
}

/** What `bun bench/log-store.ts rates <dir> <n>` prints: both rates, measured in that process alone. */
export interface LogRates {
  writer: number
  path: { perSecond: number; servingUsPerEntry: number }
}

if (import.meta.main && process.argv[2] === 'rates') {
  const [dir = '.', n = '200000'] = process.argv.slice(3)
  // A first, shorter run warms the JIT up: the figure is the rate the writer sustains, not its first second's.
  await writerRate(join(dir, 'writer-warm.db'), 10_000)
  const writer = Math.round(await writerRate(join(dir, 'writer.db'), Number(n)))
  const path = await logPathRate(join(dir, 'log-path.db'), Number(n))
  const out: LogRates = { writer, path: { perSecond: Math.round(path.perSecond), servingUsPerEntry: path.servingUsPerEntry } }
  console.log(JSON.stringify(out))
}
