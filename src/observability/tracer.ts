// Spans of an API request (SERVER) and of each upstream attempt (CLIENT) with the OpenTelemetry GenAI
// semantic conventions; the incoming traceparent is continued and the provider gets the attempt's.

import type { Target } from '../providers/adapter'
import type { ProviderId } from '../providers/provider-id'
import { GENAI_PROVIDER, kindOf } from '../providers/registry'
import type { Attempt, LogEntry } from '../domain/log-entry'
import { type AttrValue, SPAN_KIND, type SpanData, STATUS_CODE } from './otlp-encode'
import { cleanTraceState, formatTraceParent, newSpanId, newTraceId, parseTraceParent } from './trace-context'
import type { TraceExporter } from './trace-exporter'

/**
 * The gen_ai.provider.name of an attempt's target, as its kind names it: the cloud that serves it (Azure OpenAI,
 * Bedrock, Vertex AI have values of their own in the conventions), an OpenAI-compatible provider's own name, else the native one's.
 */
const genAiProvider = (t: Target): string => kindOf(t).genAiName(t)

/** The trace of one API request: its own (SERVER) span and the attempts' spans, exported together. */
export interface RequestTrace {
  /** GenAI operation of the endpoint (`chat`, `embeddings`), named on the attempts' spans; undefined for one that calls no model. */
  operation: string | undefined
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  traceState: string | undefined
  sampled: boolean
  startNs: bigint
  attempts: AttemptSpan[]
}

/** What an ended attempt tells its span. */
export interface AttemptFacts {
  readonly record: Attempt
  readonly target: Target
  readonly status: number
  readonly body: { temperature?: number | null; max_tokens?: number | null; max_completion_tokens?: number | null }
}

export class AttemptSpan {
  readonly spanId = newSpanId()
  readonly startNs = nowNs()
  data: SpanData | undefined

  constructor(private readonly trace: RequestTrace) {}

  /** The headers the provider receives: same trace, this attempt as the parent. */
  headers(): Record<string, string> {
    const h: Record<string, string> = { traceparent: formatTraceParent(this.trace.traceId, this.spanId, this.trace.sampled) }
    if (this.trace.traceState) h.tracestate = this.trace.traceState
    return h
  }

  end(f: AttemptFacts): void {
    if (this.data) return
    // An upstream call is a chat unless the endpoint says otherwise (count_tokens counts a chat's input).
    const operation = this.trace.operation ?? 'chat'
    const a: Record<string, AttrValue> = {
      'gen_ai.operation.name': operation,
      'gen_ai.provider.name': genAiProvider(f.target),
      'gen_ai.request.model': f.target.model.id,
      'gw.attempt.outcome': f.record.outcome,
    }
    // The provider key's name (never the key).
    if (f.record.key) a['gw.provider_key'] = f.record.key
    const b = f.body
    if (typeof b.temperature === 'number') a['gen_ai.request.temperature'] = b.temperature
    const max = b.max_completion_tokens ?? b.max_tokens
    if (typeof max === 'number') a['gen_ai.request.max_tokens'] = max
    if (f.status) a['http.response.status_code'] = f.status
    const failed = f.record.outcome !== 'ok' && f.record.outcome !== 'refusal_detected'
    if (failed) a['error.type'] = f.record.outcome
    this.data = {
      traceId: this.trace.traceId,
      spanId: this.spanId,
      parentSpanId: this.trace.spanId,
      traceState: this.trace.traceState,
      name: `${operation} ${f.target.model.id}`,
      kind: SPAN_KIND.client,
      startNs: this.startNs,
      endNs: nowNs(),
      attributes: a,
      // The kind only: upstream messages may quote the prompt or the answer (never on spans, PRODUCT §14).
      status: failed ? { code: STATUS_CODE.error, message: f.record.outcome } : { code: STATUS_CODE.unset },
    }
  }
}

/** Unix epoch nanoseconds from a performance.now() value. */
const toNs = (perfMs: number) => BigInt(Math.round((performance.timeOrigin + perfMs) * 1e6))
const nowNs = () => toNs(performance.now())

/** What the finished request adds to its span beyond the log entry. */
export interface RequestFacts {
  entry: LogEntry
  method: string
  finishReasons: string[]
  /** Prompt and completion, only with GW_TRACE_CONTENT=true. */
  content?: { input: unknown; output: unknown }
}

export class Tracer {
  constructor(private readonly exporter: TraceExporter) {}

  /**
   * The trace of a new request: a child of the incoming traceparent, or a new root. `operation`: the
   * GenAI operation of an endpoint that calls a model, as its declaration says (none for models, logs, usage).
   */
  start(headers: Headers, start: number, operation: string | undefined): RequestTrace {
    const parent = parseTraceParent(headers.get('traceparent'))
    return {
      operation,
      traceId: parent?.traceId ?? newTraceId(),
      spanId: newSpanId(),
      parentSpanId: parent?.spanId,
      traceState: parent ? cleanTraceState(headers.get('tracestate')) : undefined,
      sampled: parent?.sampled ?? true,
      startNs: toNs(start),
      attempts: [],
    }
  }

  /** Spans made outside a request's trace (an MCP tool call's, PRODUCT §20), exported with the others. */
  export(spans: SpanData[]): void {
    this.exporter.add(spans)
  }

  attempt(trace: RequestTrace): AttemptSpan {
    const span = new AttemptSpan(trace)
    trace.attempts.push(span)
    return span
  }

  /** Ends the request's span and hands it, with its attempts' spans, to the exporter. */
  finish(trace: RequestTrace, f: RequestFacts): void {
    if (!trace.sampled) return
    const e = f.entry
    const a: Record<string, AttrValue> = {
      'http.request.method': f.method,
      'http.route': e.endpoint,
      'http.response.status_code': e.status,
      'gw.request_id': e.requestId,
    }
    const operation = trace.operation
    const chat = operation !== undefined
    if (operation) a['gen_ai.operation.name'] = operation
    if (e.orgId) a['gw.org_id'] = e.orgId
    if (e.authMode) a['gw.auth_mode'] = e.authMode
    if (e.requestedModel) a['gen_ai.request.model'] = e.requestedModel
    const provider = e.provider
    // An OpenAI-compatible provider is named by its own name (PRODUCT §17).
    if (provider) a['gen_ai.provider.name'] = GENAI_PROVIDER[provider as ProviderId] ?? provider
    if (e.errorCode) a['error.type'] = e.errorCode
    if (e.guardrails?.length) a['gw.guardrails'] = e.guardrails.map((g) => `${g.name}:${g.action}${g.entities.length ? `:${g.entities.join(',')}` : ''}`)
    if (e.fallback.used) {
      a['gw.fallback.reason'] = e.fallback.reason ?? ''
      if (e.fallback.model) a['gw.fallback.model'] = e.fallback.model
    }
    const answered = chat && e.status < 400 && e.model
    const usage: Record<string, AttrValue> = {}
    if (answered) {
      usage['gen_ai.response.model'] = e.model as string
      usage['gen_ai.usage.input_tokens'] = e.usage.promptTokens
      usage['gen_ai.usage.output_tokens'] = e.usage.completionTokens
      if (f.finishReasons.length) usage['gen_ai.response.finish_reasons'] = f.finishReasons
      if (e.costUsd !== null) a['gw.cost_usd'] = e.costUsd
      if (f.content) {
        a['gen_ai.input.messages'] = JSON.stringify(f.content.input)
        a['gen_ai.output.messages'] = JSON.stringify(f.content.output)
      }
    }
    Object.assign(a, usage)
    const spans: SpanData[] = []
    // The answering attempt is the last one that got an answer; it carries the usage too.
    const answering = answered ? trace.attempts.findLast((s) => s.data && s.data.status.code !== STATUS_CODE.error) : undefined
    for (const s of trace.attempts) {
      if (!s.data) continue
      if (s === answering) Object.assign(s.data.attributes, usage)
      spans.push(s.data)
    }
    spans.push({
      traceId: trace.traceId,
      spanId: trace.spanId,
      parentSpanId: trace.parentSpanId,
      traceState: trace.traceState,
      name: `${f.method} ${e.endpoint}`,
      kind: SPAN_KIND.server,
      startNs: trace.startNs,
      endNs: nowNs(),
      attributes: a,
      status: e.status >= 500 ? { code: STATUS_CODE.error, message: e.errorCode ?? '' } : { code: STATUS_CODE.unset },
    })
    this.exporter.add(spans)
  }
}
