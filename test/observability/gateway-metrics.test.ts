// GatewayMetrics' per-request counting (src/observability/gateway-metrics.ts): the series it keeps per
// endpoint and model hold each org's, model's and provider's counts apart, as joining the labels did.

import { expect, test } from 'bun:test'
import { loadCatalog } from '../../src/catalog/catalog'
import type { LogEntry } from '../../src/domain/log-entry'
import { GatewayMetrics } from '../../src/observability/gateway-metrics'
import { readExposition } from '../helpers/prometheus'

const sources = { logs: () => ({ queued: 0, written: 0, spooled: 0, dropped: 0 }), openCircuits: () => [], traces: () => ({ exported: 0, dropped: 0, failedExports: 0 }) }

function entry(over: Partial<LogEntry>): LogEntry {
  return {
    endpoint: '/v1/chat/completions',
    orgId: 'o1',
    model: 'openai/gpt-4o-mini',
    requestedModel: 'openai/gpt-4o-mini',
    status: 200,
    errorCode: null,
    stream: false,
    ttftMs: null,
    attempts: [{ model: over.model ?? 'openai/gpt-4o-mini', key: 'default', outcome: 'ok', status: 200, latencyMs: 5 }],
    fallback: { used: false },
    usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, totalTokens: 15, estimated: false },
    costUsd: 0.001,
    ...over,
  } as LogEntry
}

test('orgs, models, providers and outcomes each count in their own series, request after request', () => {
  const m = new GatewayMetrics(loadCatalog(), sources, { orgLabel: true })
  try {
    const sample = (e: LogEntry) => m.request({ entry: e, seconds: 0.2, known: e.model?.startsWith('openai/gpt-4o') || e.model?.startsWith('anthropic/claude-haiku-4-5'), rateLimitScope: undefined })
    for (let i = 0; i < 3; i++) sample(entry({}))
    sample(entry({ orgId: 'o2' }))
    sample(entry({ orgId: 'o2', status: 502, errorCode: 'provider_error', model: null, usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, totalTokens: 0, estimated: false }, costUsd: null, attempts: [{ model: 'openai/gpt-4o-mini', key: 'default', outcome: 'provider_error', status: 500, latencyMs: 1 }] } as Partial<LogEntry>))
    sample(entry({ model: 'anthropic/claude-haiku-4-5', requestedModel: 'anthropic/claude-haiku-4-5', stream: true, ttftMs: 120 }))
    // Two models outside the catalog, of two providers: both "other", each under its provider.
    sample(entry({ model: 'openai/my-tuned-1', requestedModel: 'openai/my-tuned-1', costUsd: null }))
    sample(entry({ model: 'mistral/my-tuned-2', requestedModel: 'mistral/my-tuned-2', costUsd: null }))
    const x = readExposition(m.render())
    const req = (labels: Record<string, string>) => x.value('gw_requests_total', labels)
    expect(req({ org: 'o1', model: 'openai/gpt-4o-mini', status: '200', code: '' })).toBe(3)
    expect(req({ org: 'o2', model: 'openai/gpt-4o-mini', status: '200', code: '' })).toBe(1)
    expect(req({ org: 'o2', model: 'openai/gpt-4o-mini', status: '502', code: 'provider_error' })).toBe(1)
    expect(req({ org: 'o1', provider: 'anthropic', model: 'anthropic/claude-haiku-4-5', status: '200' })).toBe(1)
    expect(req({ org: 'o1', provider: 'openai', model: 'other', status: '200' })).toBe(1)
    expect(req({ org: 'o1', provider: 'mistral', model: 'other', status: '200' })).toBe(1)
    expect(x.value('gw_tokens_total', { org: 'o1', model: 'openai/gpt-4o-mini', kind: 'input' })).toBe(30)
    expect(x.value('gw_tokens_total', { org: 'o2', model: 'openai/gpt-4o-mini', kind: 'output' })).toBe(5)
    expect(x.value('gw_cost_usd_total', { org: 'o1', model: 'openai/gpt-4o-mini' })).toBeCloseTo(0.003, 9)
    expect(x.value('gw_upstream_attempts_total', { model: 'openai/gpt-4o-mini', outcome: 'ok' })).toBe(4)
    expect(x.value('gw_upstream_attempts_total', { model: 'openai/gpt-4o-mini', outcome: 'provider_error' })).toBe(1)
    // No series for kinds never counted (reasoning), and the duration counts every request of its model.
    expect(x.families.get('gw_tokens_total')?.metrics.some((s) => s.labels?.kind === 'reasoning')).toBe(false)
    expect(x.histogram('gw_request_duration_seconds', { endpoint: '/v1/chat/completions', provider: 'openai', model: 'openai/gpt-4o-mini' })?.count).toBe(5)
    expect(x.histogram('gw_time_to_first_token_seconds', { model: 'anthropic/claude-haiku-4-5' })?.count).toBe(1)
  } finally {
    m.close()
  }
})
