// The one observer of the pipeline: each finished API request feeds the metrics, the access log and
// (with tracing on) its trace; the pipeline calls it from its composition point, and each upstream
// attempt asks it for a span.

import type { RequestContext } from '../pipeline/context'
import type { LogEntry } from '../domain/log-entry'
import type { AccessLog } from './access-log'
import type { GatewayMetrics } from './gateway-metrics'
import type { SpanData } from './otlp-encode'
import type { AttemptSpan, Tracer } from './tracer'

export interface FinishedRequest {
  entry: LogEntry
  /** Identity was established (401s have none). */
  authenticated: boolean
  ctx: RequestContext
  known: boolean | undefined
  rateLimitScope: string | undefined
  /** The answer as logged (a completion, or a stream's transcript), for finish reasons and content. */
  response: unknown
  /** The messages sent, for GW_TRACE_CONTENT. */
  messages: unknown
}

/** finish_reason values of a completion body or of a stream's transcript. */
function finishReasons(response: unknown): string[] {
  if (typeof response !== 'object' || response === null) return []
  const r = response as { choices?: { finish_reason?: unknown }[]; finish_reason?: unknown }
  const all = Array.isArray(r.choices) ? r.choices.map((c) => c.finish_reason) : [r.finish_reason]
  return all.filter((f): f is string => typeof f === 'string')
}

export class Observer {
  constructor(
    readonly metrics: GatewayMetrics,
    readonly accessLog: AccessLog,
    private readonly tracer?: Tracer,
    private readonly traceContent = false,
    private readonly closeTracer: () => Promise<void> = async () => {},
  ) {}

  /** At arrival: with tracing on, the request's trace (continuing an incoming traceparent). */
  requestStarted(ctx: RequestContext): void {
    this.metrics.inFlight++
    if (this.tracer) ctx.trace = this.tracer.start(ctx.headers, ctx.start, ctx.operation)
  }

  /** A span for an upstream attempt about to be sent; undefined when tracing is off. */
  attemptSpan(ctx: RequestContext): AttemptSpan | undefined {
    return ctx.trace && this.tracer?.attempt(ctx.trace)
  }

  /** Whether spans are exported (OTEL_EXPORTER_OTLP_ENDPOINT). */
  get tracing(): boolean {
    return this.tracer !== undefined
  }

  /** A span of its own (an MCP tool call's), exported with the requests' when tracing is on. */
  exportSpan(span: SpanData): void {
    this.tracer?.export([span])
  }

  requestFinished(r: FinishedRequest): void {
    this.metrics.inFlight--
    const seconds = (performance.now() - r.ctx.start) / 1000
    this.metrics.request({ entry: r.entry, seconds, known: r.known, rateLimitScope: r.rateLimitScope })
    this.accessLog.request(r.entry, r.authenticated)
    const trace = r.ctx.trace
    if (trace && this.tracer)
      this.tracer.finish(trace, {
        entry: r.entry,
        method: r.ctx.method,
        finishReasons: finishReasons(r.response),
        ...(this.traceContent ? { content: { input: r.messages, output: r.response } } : {}),
      })
  }

  async close(): Promise<void> {
    this.metrics.close()
    this.accessLog.flush()
    await this.closeTracer()
  }
}
