// gw's Prometheus metrics (PRODUCT §14): what is counted per API request and per upstream attempt, and
// what is read at scrape time (log writer, circuit breakers, the process, event-loop lag).

import { readdirSync, readFileSync } from 'node:fs'
import type { Catalog } from '../catalog/catalog'
import { toProviderId } from '../providers/provider-id'
import type { LogEntry } from '../domain/log-entry'
import { type CounterSeries, type Histogram, type HistogramSeries, type LabelValues, MetricRegistry, SEP } from './metric-registry'

/** Seconds, from 5 ms to 10 minutes: LLM answers range from cached hits to long reasoning runs. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600]
/** Seconds to the first token of a stream. */
export const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120]

/** What one finished API request adds to the metrics. */
export interface RequestSample {
  entry: LogEntry
  /** Seconds from arrival to the end of the answer. */
  seconds: number
  /** The answering model is in the catalog (undefined: look it up). */
  known: boolean | undefined
  /** `org` or `key` when gw's own rate limit refused the request. */
  rateLimitScope: string | undefined
}

/** What the scrape-time metrics read from the rest of gw. */
export interface MetricSources {
  logs: () => { queued: number; written: number; spooled: number; dropped: number }
  /** Open breakers: [`provider/model`, how many org/key pairs have it open]. */
  openCircuits: () => Iterable<[string, number]>
  /** The OTLP exporter's counts (zeros when tracing is off). */
  traces: () => { exported: number; dropped: number; failedExports: number }
}

const OTHER = 'other'

type TokenKind = 'input' | 'cached_input' | 'cache_write' | 'output' | 'reasoning'

/** The series one request's labels name (endpoint, provider, model, and the org when it is a label), each made when first counted. */
interface ModelSeries {
  provider: string
  /** endpoint, provider, model. */
  labels: LabelValues
  org: string[]
  duration: HistogramSeries
  ttft?: HistogramSeries
  /** gw_requests_total with status 200 and no error code. */
  answered?: CounterSeries
  attemptOk?: CounterSeries
  tokens: Partial<Record<TokenKind, CounterSeries>>
  cost?: CounterSeries
}

function newSeries(duration: Histogram, endpoint: string, provider: string, model: string, org: string[]): ModelSeries {
  const labels = [endpoint, provider, model]
  return { provider, labels, org, duration: duration.series(labels), tokens: {} }
}

/** The native provider a `provider/id` string names, or '' when it names none. */
function providerOf(model: string | null): string {
  const slash = model ? model.indexOf('/') : -1
  return (model && slash > 0 && toProviderId(model.slice(0, slash))) || ''
}

export class GatewayMetrics {
  readonly registry = new MetricRegistry()
  private readonly orgLabel: boolean
  private readonly requests
  private readonly duration
  private readonly ttft
  private readonly attempts
  private readonly fallbacks
  private readonly tokens
  private readonly cost
  private readonly rateLimited
  private readonly guardrails
  private readonly cacheRequests
  private readonly lag = new EventLoopLag()
  /** Series kept per endpoint and model label (seriesOf). */
  private readonly byEndpoint = new Map<string, Map<string, ModelSeries>>()
  /** API requests started and not yet finished (a stream until its end). */
  inFlight = 0

  constructor(
    private readonly catalog: Catalog,
    sources: MetricSources,
    opts: { orgLabel?: boolean } = {},
  ) {
    this.orgLabel = opts.orgLabel ?? false
    const org = this.orgLabel ? ['org'] : []
    const r = this.registry
    this.requests = r.counter('gw_requests_total', 'API requests answered, policy refusals and 401s included.', [
      'endpoint', 'provider', 'model', 'status', 'code', ...org,
    ])
    this.duration = r.histogram('gw_request_duration_seconds', 'Time from arrival to the end of the answer (streams: the last byte).', [
      'endpoint', 'provider', 'model',
    ], LATENCY_BUCKETS)
    this.ttft = r.histogram('gw_time_to_first_token_seconds', 'Streams: time from arrival to the first content byte.', [
      'endpoint', 'provider', 'model',
    ], TTFT_BUCKETS)
    this.attempts = r.counter('gw_upstream_attempts_total', 'Upstream attempts by outcome: ok or the failure kind (PRODUCT §4a).', [
      'provider', 'model', 'outcome',
    ])
    this.fallbacks = r.counter('gw_fallbacks_total', 'Requests answered by a fallback model, by the failure kind that fired it.', ['reason'])
    this.tokens = r.counter('gw_tokens_total', 'Tokens by kind (input, cached_input, cache_write, output, reasoning; disjoint).', [
      'provider', 'model', 'kind', ...org,
    ])
    this.cost = r.counter('gw_cost_usd_total', 'Cost in USD at catalog prices (requests with a known price).', ['provider', 'model', ...org])
    this.rateLimited = r.counter('gw_rate_limited_total', "Requests refused by gw's own rate limits.", ['scope'])
    this.cacheRequests = r.counter('gw_cache_requests_total', 'Requests of orgs whose response cache is on: hit, miss or refresh (x-gw-cache: refresh).', ['result'])
    this.guardrails = r.counter('gw_guardrail_actions_total', "What the orgs' guardrails did (block, redact, mask; a webhook's allow, deny, rewrite, fail_open, fail_closed).", [
      'name',
      'action',
    ])
    r.collected('gw_requests_in_flight', 'API requests being answered (streams until their end).', 'gauge', [], () => [[[], this.inFlight]])
    r.collected('gw_circuit_open', 'Open circuit breakers per model (how many org and provider-key pairs have it open).', 'gauge', ['provider', 'model'], () =>
      this.circuits(sources),
    )
    r.collected('gw_log_queue_depth', 'Log entries waiting to be written.', 'gauge', [], () => [[[], sources.logs().queued]])
    r.collected('gw_log_entries_written_total', 'Log entries written to the store.', 'counter', [], () => [[[], sources.logs().written]])
    r.collected('gw_log_entries_spooled_total', 'Log entries spooled to disk while the store was unavailable.', 'counter', [], () => [
      [[], sources.logs().spooled],
    ])
    r.collected('gw_log_entries_dropped_total', 'Log entries lost (queue full, or unwritable at shutdown).', 'counter', [], () => [
      [[], sources.logs().dropped],
    ])
    r.collected('gw_trace_spans_exported_total', 'Spans accepted by the OTLP collector.', 'counter', [], () => [[[], sources.traces().exported]])
    r.collected('gw_trace_spans_dropped_total', 'Spans lost: queue full, or the collector down or refusing.', 'counter', [], () => [
      [[], sources.traces().dropped],
    ])
    r.collected('gw_trace_export_failures_total', 'OTLP export requests that failed.', 'counter', [], () => [
      [[], sources.traces().failedExports],
    ])
    processMetrics(r, this.lag)
  }

  /** `provider/id` as a label: ids the catalog does not know become `other` (bounded series). */
  modelLabel(model: string | null, known?: boolean): string {
    if (!model) return ''
    if (known !== undefined) return known ? model : OTHER
    const slash = model.indexOf('/')
    const provider = slash > 0 ? toProviderId(model.slice(0, slash)) : undefined
    if (!provider) return OTHER
    const id = model.slice(slash + 1)
    return this.catalog.resolve(provider, id).known ? `${provider}/${id}` : OTHER
  }

  request(s: RequestSample): void {
    const e = s.entry
    // The answering model, or the requested one when none answered.
    const name = e.model ?? e.requestedModel
    const model = this.modelLabel(name, e.model ? s.known : undefined)
    const m = this.seriesOf(e.endpoint, model, name, this.orgLabel ? [e.orgId] : [])
    const { provider, org } = m
    if (e.status === 200 && e.errorCode === null) (m.answered ??= this.requests.series([...m.labels, '200', '', ...org])).value++
    else this.requests.inc([...m.labels, String(e.status), e.errorCode ?? '', ...org])
    this.duration.record(m.duration, s.seconds)
    if (e.stream && e.ttftMs !== null) this.ttft.record((m.ttft ??= this.ttft.series(m.labels)), e.ttftMs / 1000)
    // An attempt on the answering model (most) takes its labels as found above.
    for (const a of e.attempts) {
      if (a.outcome === 'skipped') continue
      if (a.model !== e.model) this.attempts.inc([providerOf(a.model), this.modelLabel(a.model), a.outcome])
      else if (a.outcome === 'ok') (m.attemptOk ??= this.attempts.series([provider, model, 'ok'])).value++
      else this.attempts.inc([provider, model, a.outcome])
    }
    if (e.fallback.used) this.fallbacks.inc([e.fallback.reason ?? 'provider_error'])
    if (s.rateLimitScope) this.rateLimited.inc([s.rateLimitScope])
    for (const g of e.guardrails ?? []) this.guardrails.inc([g.name, g.action])
    if (e.cache) this.cacheRequests.inc([e.cache])
    // Tokens and cost count whoever answered, an org's own provider too (under provider="").
    const u = e.usage
    if (u.totalTokens > 0) {
      // Disjoint kinds, split as costUsd() splits them (prompt tokens include cached and written ones).
      const reasoning = Math.min(u.reasoningTokens, u.completionTokens)
      this.addTokens(m, 'input', Math.max(0, u.promptTokens - u.cachedTokens - u.cacheWriteTokens))
      this.addTokens(m, 'cached_input', u.cachedTokens)
      this.addTokens(m, 'cache_write', u.cacheWriteTokens)
      this.addTokens(m, 'output', u.completionTokens - reasoning)
      this.addTokens(m, 'reasoning', reasoning)
    }
    if (e.costUsd !== null) (m.cost ??= this.cost.series([provider, model, ...org])).value += e.costUsd
  }

  /**
   * The series of requests with this endpoint and model label: kept for a catalog model's (a bounded
   * set), so most requests find theirs with two lookups instead of joining their labels into keys.
   */
  private seriesOf(endpoint: string, model: string, name: string | null, org: string[]): ModelSeries {
    // One of the four native providers, or '' (an org's own, by a name it chose, stays out of the labels).
    const named = model !== OTHER && model !== ''
    if (!named) return newSeries(this.duration, endpoint, providerOf(name), model, org)
    let byModel = this.byEndpoint.get(endpoint)
    if (!byModel) this.byEndpoint.set(endpoint, (byModel = new Map()))
    const key = org.length ? `${model}${SEP}${org[0]}` : model
    let m = byModel.get(key)
    if (!m) byModel.set(key, (m = newSeries(this.duration, endpoint, model.split('/')[0] as string, model, org)))
    return m
  }

  private addTokens(m: ModelSeries, kind: TokenKind, n: number): void {
    if (n > 0) (m.tokens[kind] ??= this.tokens.series([m.provider, m.labels[2] as string, kind, ...m.org])).value += n
  }

  private *circuits(sources: MetricSources): Iterable<[LabelValues, number]> {
    const byModel = new Map<string, number>()
    for (const [model, n] of sources.openCircuits()) {
      const label = this.modelLabel(model)
      byModel.set(label, (byModel.get(label) ?? 0) + n)
    }
    for (const [model, n] of byModel) yield [[providerOf(model), model], n]
  }

  /** The exposition; also the moment scrape-time metrics are read. */
  render(): string {
    return this.registry.render()
  }

  close(): void {
    this.lag.stop()
  }
}

/** Largest event-loop delay seen over the last few seconds, sampled by a 100 ms timer. */
class EventLoopLag {
  private readonly intervalMs = 100
  private windowMax = 0
  private lastMax = 0
  private ticks = 0
  private expected = performance.now() + this.intervalMs
  private readonly timer = setInterval(() => this.tick(), this.intervalMs)

  constructor() {
    this.timer.unref()
  }

  private tick(): void {
    const now = performance.now()
    this.windowMax = Math.max(this.windowMax, now - this.expected)
    this.expected = now + this.intervalMs
    if (++this.ticks % 50 === 0) {
      this.lastMax = this.windowMax
      this.windowMax = 0
    }
  }

  /** Seconds. */
  get value(): number {
    return Math.max(this.lastMax, this.windowMax) / 1000
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

const startSeconds = Math.round(Date.now() / 1000 - process.uptime())

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return Number.NaN
  }
}

function maxFds(): number {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))
    return m ? Number(m[1]) : Number.NaN
  } catch {
    return Number.NaN
  }
}

/** The standard process_* metrics (as client libraries name them) and the event-loop lag. */
function processMetrics(r: MetricRegistry, lag: EventLoopLag): void {
  r.collected('process_cpu_seconds_total', 'User and system CPU time spent, in seconds.', 'counter', [], () => {
    const c = process.cpuUsage()
    return [[[], (c.user + c.system) / 1e6]]
  })
  r.collected('process_cpu_user_seconds_total', 'User CPU time spent, in seconds.', 'counter', [], () => [[[], process.cpuUsage().user / 1e6]])
  r.collected('process_cpu_system_seconds_total', 'System CPU time spent, in seconds.', 'counter', [], () => [
    [[], process.cpuUsage().system / 1e6],
  ])
  r.collected('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge', [], () => [[[], process.memoryUsage().rss]])
  r.collected('process_heap_bytes', 'JavaScript heap in use, in bytes.', 'gauge', [], () => [[[], process.memoryUsage().heapUsed]])
  r.collected('process_start_time_seconds', 'Start time of the process since the Unix epoch, in seconds.', 'gauge', [], () => [
    [[], startSeconds],
  ])
  r.collected('process_open_fds', 'Open file descriptors.', 'gauge', [], () => [[[], openFds()]])
  r.collected('process_max_fds', 'Limit on open file descriptors.', 'gauge', [], () => [[[], maxFds()]])
  r.collected('gw_event_loop_lag_seconds', 'Largest event-loop delay over the last 5 s.', 'gauge', [], () => [[[], lag.value]])
}
