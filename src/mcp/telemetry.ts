// What each MCP tool call leaves behind (PRODUCT §20): its log entry, gw_mcp_calls_total and its duration, and
// an `execute_tool` span (OpenTelemetry GenAI conventions).

import type { LogEntry } from '../domain/log-entry'
import type { Counter, Histogram } from '../observability/metric-registry'
import { LATENCY_BUCKETS } from '../observability/gateway-metrics'
import { SPAN_KIND, STATUS_CODE } from '../observability/otlp-encode'
import { newSpanId, newTraceId, parseTraceParent } from '../observability/trace-context'
import { CLIENT_CLOSED } from '../pipeline/5-attempt'
import { answeredOutcome, failureOutcome, recordRequest } from '../pipeline/7-log'
import type { AuthedContext, Deps } from '../pipeline/context'
import type { ErrorCode } from '../errors'

/** How a call ended, as the metric's `status` label says it. */
export type CallStatus = 'ok' | 'tool_error' | 'denied' | 'rate_limited' | 'unauthorized' | 'upstream_error' | 'unreachable' | 'unknown_tool' | 'cancelled'

/** The log entry's HTTP-like status and code of each. */
const ENTRY: Record<CallStatus, [number, ErrorCode | null]> = {
  ok: [200, null],
  tool_error: [200, null],
  denied: [403, 'forbidden'],
  rate_limited: [429, 'rate_limit_exceeded'],
  unauthorized: [401, 'unauthorized'],
  upstream_error: [502, 'provider_error'],
  unreachable: [502, 'provider_error'],
  unknown_tool: [404, 'gateway_error'],
  // The client cancelled the call or went away (the status gw logs for a client that left, PRODUCT §9).
  cancelled: [CLIENT_CLOSED, 'gateway_error'],
}

export interface ToolCall {
  ctx: AuthedContext
  server: string
  tool: string
  arguments: unknown
  /** The upstream's JSON-RPC request id, the span's gen_ai.tool.call.id. */
  callId: string
  traceparent: string | null
}

export interface CallEnd {
  status: CallStatus
  message?: string
  result?: unknown
  upstreamLatencyMs?: number | null
}

/** Most distinct {server, tool} label pairs; later ones are counted as tool="other". */
const MAX_SERIES = 1000

export class McpTelemetry {
  private readonly calls: Counter
  private readonly duration: Histogram
  private readonly series = new Set<string>()

  constructor(private readonly deps: Deps) {
    const r = deps.observer.metrics.registry
    this.calls = r.counter('gw_mcp_calls_total', 'MCP tool calls through /mcp by server, tool and how they ended.', ['server', 'tool', 'status'])
    this.duration = r.histogram('gw_mcp_call_duration_seconds', 'MCP tool calls: time from the call to its result.', ['server', 'tool'], LATENCY_BUCKETS)
  }

  /** The call's context: a log entry of its own (its own request id), under the session's identity and end user. */
  static context(session: AuthedContext, args: unknown, signal: AbortSignal): AuthedContext {
    const text = JSON.stringify(args ?? {})
    return {
      ...session,
      requestId: Bun.randomUUIDv7(),
      start: performance.now(),
      receivedAt: Date.now(),
      method: 'POST',
      endpoint: '/mcp',
      errorStyle: 'gw',
      signal,
      trace: undefined,
      rawBody: { value: args ?? {}, text, bytes: Buffer.byteLength(text) },
    }
  }

  /**
   * Logs, counts and traces one finished call; returns its log entry and, when the log queue is full,
   * the promise of room the caller waits on before it answers (back-pressure, as for API requests).
   */
  finish(call: ToolCall, end: CallEnd): { entry: LogEntry; room: Promise<void> | undefined } {
    const [status, code] = ENTRY[end.status]
    const base = code ? failureOutcome(status, code, end.message ?? end.status) : answeredOutcome(status)
    const full = `${call.server}__${call.tool}`
    const { entry, room } = recordRequest(
      this.deps,
      call.ctx,
      undefined,
      { ...base, responseBody: end.result, upstreamLatencyMs: end.upstreamLatencyMs ?? null },
      { mcp: { server: call.server, tool: call.tool }, model: full, requestedModel: full, metadata: { mcpServer: call.server, mcpTool: call.tool } },
    )
    const [server, tool] = this.labels(call, end.status)
    this.calls.inc([server, tool, end.status])
    this.duration.observe([server, tool], entry.latencyMs / 1000)
    // Its line in the access log, like an API request's (GW_LOG_FORMAT).
    this.deps.observer.accessLog.request(entry, true)
    if (this.deps.observer.tracing) this.span(call, end, entry)
    return { entry, room }
  }

  /**
   * The call's {server, tool} labels, bounded: a name the client made up (no such server) is `unknown`,
   * and past MAX_SERIES pairs a new one is `other`.
   */
  private labels(call: ToolCall, status: CallStatus): [string, string] {
    if (status === 'unknown_tool') return ['unknown', 'unknown']
    const pair = `${call.server}\n${call.tool}`
    if (!this.series.has(pair) && this.series.size < MAX_SERIES) this.series.add(pair)
    return this.series.has(pair) ? [call.server, call.tool] : ['other', 'other']
  }

  private span(call: ToolCall, end: CallEnd, entry: LogEntry): void {
    const parent = parseTraceParent(call.traceparent)
    if (parent && !parent.sampled) return
    const endNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6))
    const failed = end.status !== 'ok'
    this.deps.observer.exportSpan({
      traceId: parent?.traceId ?? newTraceId(),
      spanId: newSpanId(),
      parentSpanId: parent?.spanId,
      traceState: undefined,
      name: `execute_tool ${call.server}__${call.tool}`,
      kind: SPAN_KIND.client,
      startNs: endNs - BigInt(entry.latencyMs) * 1_000_000n,
      endNs,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': `${call.server}__${call.tool}`,
        'gen_ai.tool.call.id': call.callId,
        'gen_ai.tool.type': 'extension',
        'gw.mcp.server': call.server,
        'gw.request_id': entry.requestId,
        'gw.org_id': entry.orgId,
        ...(failed ? { 'error.type': end.status } : {}),
      },
      status: failed && end.status !== 'tool_error' ? { code: STATUS_CODE.error, message: end.status } : { code: STATUS_CODE.unset },
    })
  }
}
