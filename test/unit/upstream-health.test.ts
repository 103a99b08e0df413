// UpstreamHealth keeps a bounded record (model names come from clients, so made-up ones must not pile up)
// and remembers a failure by its class (PRODUCT §4a): request failures never, key failures per key.

import { expect, test } from 'bun:test'
import { KEY_OUT_MS, MAX_TRACKED_MODELS, UpstreamHealth } from '../../src/pipeline/upstream-health'

test(`at most ${MAX_TRACKED_MODELS} org/model pairs are tracked; the longest-tracked is forgotten first`, () => {
  const health = new UpstreamHealth({ failureThreshold: 1 })
  for (let i = 0; i <= MAX_TRACKED_MODELS; i++) health.record('o', `openai/made-up-${i}`, { kind: 'provider_error', status: 500, message: 'HTTP 500' })
  expect(health.tracked).toBe(MAX_TRACKED_MODELS)
  // The first model's open breaker went with its record; the newest is still refused.
  expect(health.admit('o', 'openai/made-up-0')).toEqual({ ok: true, probe: false })
  expect(health.admit('o', `openai/made-up-${MAX_TRACKED_MODELS}`).ok).toBe(false)
  // A model that recovers leaves the record.
  health.record('o', `openai/made-up-${MAX_TRACKED_MODELS}`, 'ok')
  expect(health.tracked).toBe(MAX_TRACKED_MODELS - 1)
})

const failure = (status: number) => ({ kind: 'provider_error' as const, status, message: `HTTP ${status}` })

test('a request failure (400, 404, 409, 413, 422) is never counted; provider failures open the breaker', () => {
  const health = new UpstreamHealth({ failureThreshold: 2 })
  for (const status of [400, 404, 409, 413, 422, 400, 400]) health.record('o', 'openai/gpt-4o', failure(status))
  expect(health.admit('o', 'openai/gpt-4o')).toEqual({ ok: true, probe: false })
  health.record('o', 'openai/gpt-4o', failure(500))
  health.record('o', 'openai/gpt-4o', { kind: 'timeout', message: 'no answer' })
  expect(health.admit('o', 'openai/gpt-4o')).toMatchObject({ ok: false, class: 'provider', message: 'circuit open after 2 consecutive failures' })
})

/** A breaker opened by one failure, past its open time, with its half-open probe admitted. */
function probing(): UpstreamHealth {
  let now = 0
  const health = new UpstreamHealth({ failureThreshold: 1, openMs: 10 }, () => now)
  health.record('o', 'm', failure(503))
  now = 20
  expect(health.admit('o', 'm')).toEqual({ ok: true, probe: true })
  return health
}

test('a half-open probe that meets a request failure is released for the next probe', () => {
  const health = probing()
  health.record('o', 'm', failure(400))
  expect(health.admit('o', 'm')).toEqual({ ok: true, probe: true })
})

test('while a half-open probe is in flight, the others are refused with a retry after 1 s (a fail-fast 502 says Retry-After)', () => {
  const health = probing()
  expect(health.admit('o', 'm')).toMatchObject({ ok: false, class: 'provider', retryAfterMs: 1000 })
})

test('a key that met a 401/403 sits out KEY_OUT_MS, or until its record changes; other keys are not affected', () => {
  let now = 1_000
  const health = new UpstreamHealth({}, () => now)
  const v1 = { name: 'a', revision: '2026-01-01T00:00:00.000Z' }
  health.record('o', 'm', failure(401), v1)
  expect(health.admit('o', 'm', v1)).toMatchObject({ ok: false, class: 'key', kind: 'provider_error', retryAfterMs: KEY_OUT_MS })
  expect(health.available('o', 'm', v1)).toBe(false)
  // A caller that does not know the record (a route choosing its target) sees it benched too.
  expect(health.available('o', 'm', { name: 'a' })).toBe(false)
  expect(health.available('o', 'm', { name: 'b', revision: v1.revision })).toBe(true)
  // The record changed (a new secret): admitted again.
  expect(health.admit('o', 'm', { name: 'a', revision: '2026-01-02T00:00:00.000Z' })).toEqual({ ok: true, probe: false })
  health.record('o', 'm', failure(403), v1)
  now += KEY_OUT_MS - 1
  expect(health.available('o', 'm', v1)).toBe(false)
  now += 1
  expect(health.admit('o', 'm', v1)).toEqual({ ok: true, probe: false })
})

test('a key benched after a 401 stays benched when an answer admitted before the bench comes in, here or on another instance', () => {
  const health = new UpstreamHealth({ failureThreshold: 3 })
  const key = { name: 'default', revision: '2026-11-27T00:00:00.000Z' }
  // Another instance benched the key (its notice) while this one had an attempt in flight with it…
  health.applyShared({ orgId: 'o', model: 'openai/gpt-4o', key: 'default', kind: 'key-out', until: Date.now() + KEY_OUT_MS, revision: key.revision, status: 401 })
  expect(health.available('o', 'openai/gpt-4o', key)).toBe(false)
  // …which then answered: that says nothing about the key now (before, it lifted the bench everywhere).
  health.record('o', 'openai/gpt-4o', 'ok', key)
  expect(health.available('o', 'openai/gpt-4o', key)).toBe(false)
  health.applyShared({ orgId: 'o', model: 'openai/gpt-4o', key: 'default', kind: 'recovered' })
  expect(health.available('o', 'openai/gpt-4o', key)).toBe(false)
  // Its record changing lifts it.
  expect(health.available('o', 'openai/gpt-4o', { ...key, revision: '2026-11-27T00:05:00.000Z' })).toBe(true)
})

test("an answer to an attempt admitted before a 429 does not lift the cool-down its Retry-After set, here or on the other instances", () => {
  let now = 1_000
  const shared: unknown[] = []
  const health = new UpstreamHealth({ onShared: (e) => shared.push(e) }, () => now)
  const other = new UpstreamHealth({}, () => now)
  // Two attempts admitted together; the first meets a 429 with Retry-After 30 s, the second then answers.
  expect(health.admit('o', 'm').ok).toBe(true)
  expect(health.admit('o', 'm').ok).toBe(true)
  health.record('o', 'm', { kind: 'rate_limit', status: 429, message: 'HTTP 429', retryAfterMs: 30_000 })
  for (const e of shared) other.applyShared(e as Parameters<UpstreamHealth['applyShared']>[0])
  health.record('o', 'm', 'ok')
  for (const e of shared.splice(0)) other.applyShared(e as Parameters<UpstreamHealth['applyShared']>[0])
  // Before: the answer lifted the cool-down here and, by its "recovered" notice, on the other instance.
  now = 2_000
  for (const h of [health, other]) expect(h.admit('o', 'm')).toMatchObject({ ok: false, kind: 'rate_limit', retryAfterMs: 29_000 })
  now = 31_001
  for (const h of [health, other]) expect(h.admit('o', 'm').ok).toBe(true)
})
