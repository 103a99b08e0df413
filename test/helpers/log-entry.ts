// A complete log entry for store-level tests: request i, one second apart, overridable field by field.

import type { LogEntry } from '../../src/domain/log-entry'

export function logEntry(i: number, over: Partial<LogEntry> = {}): LogEntry {
  return {
    requestId: `req-${String(i).padStart(6, '0')}`,
    createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
    orgId: 'o1',
    endpoint: '/v1/chat/completions',
    authMode: 'GwKey',
    subject: 'sk_x',
    endUserId: null,
    user: null,
    promptId: null,
    promptSlug: null,
    promptVersion: null,
    requestedModel: 'openai/gpt-4o',
    route: null,
    providerKey: null,
    model: 'openai/gpt-4o',
    provider: 'openai',
    stream: false,
    status: 200,
    errorCode: null,
    errorMessage: null,
    fallback: { used: false, reason: null, model: null },
    attempts: [],
    usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false },
    costUsd: null,
    priceVersion: 'test',
    latencyMs: 1,
    upstreamLatencyMs: 1,
    ttftMs: null,
    incomplete: false,
    refusal: false,
    warnings: [],
    metadata: { env: i % 2 ? 'prod' : 'dev', shard: i % 3 },
    structuredOutput: null,
    ...over,
  }
}
