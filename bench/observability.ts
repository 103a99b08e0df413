// `bun bench/observability.ts`: CPU per API request of the observer (PRODUCT §14) on a realistic mix of
// finished requests — metrics alone (budget: 3 µs), with the JSON access log, and with traces (span
// building plus protobuf encoding, which runs later off the request path). Also run by `bun run bench`.

import { loadCatalog } from '../src/catalog/catalog'
import { loadConfig } from '../src/config'
import { AccessLog, LineWriter } from '../src/observability/access-log'
import { GatewayMetrics } from '../src/observability/gateway-metrics'
import { Observer } from '../src/observability/observer'
import { TraceExporter, traceResource } from '../src/observability/trace-exporter'
import { Tracer } from '../src/observability/tracer'
import type { RequestContext } from '../src/pipeline/context'
import type { Target } from '../src/providers/adapter'
import type { LogEntry } from '../src/domain/log-entry'
import { entry as benchEntry } from './log-store'

const catalog = loadCatalog()

/** The log store bench's realistic entry, without bodies or tags (the observer reads neither), as given. */
function entry(over: Partial<LogEntry>): LogEntry {
  const { requestBody: _q, responseBody: _r, ...base } = benchEntry(0, Date.now())
  return {
    ...base,
    stream: false,
    status: 200,
    errorCode: null,
    endUserId: null,
    user: null,
    usage: { promptTokens: 420, completionTokens: 180, totalTokens: 600, cachedTokens: 128, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false },
    costUsd: 0.000171,
    latencyMs: 130,
    upstreamLatencyMs: 100,
    ttftMs: null,
    metadata: {},
    ...over,
  }
}

/** Eight shapes of finished request, as a gateway sees them. */
const MIX: { e: LogEntry; known: boolean | undefined; scope?: string }[] = [
  { e: entry({}), known: true },
  { e: entry({ stream: true, ttftMs: 240 }), known: true },
  { e: entry({ model: 'anthropic/claude-fable-5-2', provider: 'anthropic', requestedModel: 'anthropic/claude-fable-5-2', attempts: [{ model: 'anthropic/claude-fable-5-2', outcome: 'ok', status: 200, latencyMs: 900 }], stream: true, ttftMs: 410 }), known: true },
  {
    e: entry({
      requestedModel: 'openai/gpt-4o',
      model: 'mistral/mistral-small-latest',
      provider: 'mistral',
      fallback: { used: true, reason: 'provider_error', model: 'mistral/mistral-small-latest' },
      attempts: [
        { model: 'openai/gpt-4o', outcome: 'provider_error', status: 500, latencyMs: 30 },
        { model: 'mistral/mistral-small-latest', outcome: 'ok', status: 200, latencyMs: 300 },
      ],
    }),
    known: true,
  },
  { e: entry({ model: null, provider: null, status: 403, errorCode: 'policy_violation', attempts: [], usage: { ...entry({}).usage, promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0 }, costUsd: null }), known: undefined },
  { e: entry({ model: null, provider: null, status: 429, errorCode: 'rate_limit_exceeded', attempts: [], usage: { ...entry({}).usage, totalTokens: 0 }, costUsd: null }), known: undefined, scope: 'org' },
  { e: entry({ requestedModel: 'openai/ft:my-tuned-model', model: 'openai/ft:my-tuned-model', attempts: [{ model: 'openai/ft:my-tuned-model', outcome: 'ok', status: 200, latencyMs: 200 }], costUsd: null }), known: false },
  { e: entry({ model: 'openai/gpt-4o', requestedModel: 'openai/gpt-4o', status: 502, errorCode: 'provider_error', attempts: [{ model: 'openai/gpt-4o', outcome: 'timeout', status: null, latencyMs: 60000 }], usage: { ...entry({}).usage, totalTokens: 0 }, costUsd: null }), known: undefined },
]

const target: Target = { provider: 'openai', kind: 'native', model: catalog.resolve('openai', 'gpt-4o-mini'), apiKey: 'x', baseUrl: 'http://x', stream: false } as unknown as Target

function observer(mode: 'metrics' | 'access-log' | 'traces'): { o: Observer; drain: () => Promise<void> } {
  const sources = {
    logs: () => ({ queued: 0, written: 0, spooled: 0, dropped: 0 }),
    openCircuits: () => [],
    traces: () => ({ exported: 0, dropped: 0, failedExports: 0 }),
  }
  const metrics = new GatewayMetrics(catalog, sources)
  const sink = new LineWriter(() => {})
  if (mode !== 'traces') return { o: new Observer(metrics, new AccessLog(mode === 'access-log' ? 'json' : 'off', sink)), drain: async () => sink.flush() }
  const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
  const otel = config.otel as NonNullable<typeof config.otel>
  const noFetch = (async () => new Response(null, { status: 200 })) as unknown as typeof fetch
  const exporter = new TraceExporter(otel, traceResource(otel), { maxQueue: 1_000_000, maxBatch: 512, intervalMs: 60_000 }, noFetch)
  return { o: new Observer(metrics, new AccessLog('off', sink), new Tracer(exporter)), drain: () => exporter.flush() }
}

/** µs of CPU per finished request, over `n` requests of the mix (after a warm-up). */
export async function observerCost(mode: 'metrics' | 'access-log' | 'traces', n: number): Promise<number> {
  const { o, drain } = observer(mode)
  const headers = new Headers()
  const run = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const m = MIX[i & 7] as (typeof MIX)[number]
      const ctx = { requestId: 'r', start: performance.now(), receivedAt: Date.now(), method: 'POST', endpoint: m.e.endpoint, headers, signal: undefined } as unknown as RequestContext
      o.requestStarted(ctx)
      for (const a of m.e.attempts) o.attemptSpan(ctx)?.end({ record: a, target, status: a.status ?? 0, body: {} })
      o.requestFinished({ entry: m.e, authenticated: true, ctx, known: m.known, rateLimitScope: m.scope, response: undefined, messages: undefined })
      if ((i & 4095) === 4095) await drain()
    }
    await drain()
  }
  await run(Math.min(n, 50_000))
  const c0 = process.cpuUsage()
  await run(n)
  const c = process.cpuUsage(c0)
  o.metrics.close()
  return Math.round(((c.user + c.system) / n) * 100) / 100
}

export async function observabilityCosts(n: number): Promise<Record<'metrics' | 'metricsAndJsonAccessLog' | 'metricsAndTraces', number>> {
  return {
    metrics: await observerCost('metrics', n),
    metricsAndJsonAccessLog: await observerCost('access-log', n),
    metricsAndTraces: await observerCost('traces', n),
  }
}

if (import.meta.main) {
  const n = Number(process.argv[2] ?? 500_000)
  console.log(`CPU per request (µs), ${n.toLocaleString('en')} requests of an 8-shape mix:`, await observabilityCosts(n))
}
