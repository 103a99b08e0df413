// UpstreamHealth keeps a bounded record: model names come from clients, so made-up ones must not pile up.

import { expect, test } from 'bun:test'
import { MAX_TRACKED_MODELS, UpstreamHealth } from '../../src/pipeline/upstream-health'

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
