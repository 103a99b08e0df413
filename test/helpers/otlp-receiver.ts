// A local OTLP/HTTP trace receiver for tests: decodes protobuf bodies with protobufjs and the message
// definitions of opentelemetry-proto (trace/v1, common/v1, resource/v1, transcribed below), or OTLP/JSON.

import protobuf from 'protobufjs'

const PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10; Status status = 15; fixed32 flags = 16;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7; }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`
const Request = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('otlp.ExportTraceServiceRequest')

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** 2 SERVER, 3 CLIENT. */
  kind: number
  startNs: bigint
  endNs: bigint
  attributes: Record<string, unknown>
  status: { code: number; message: string }
  resource: Record<string, unknown>
}

type Any = Record<string, any>

function anyValue(v: Any | undefined): unknown {
  if (!v) return undefined
  const s = v.string_value ?? v.stringValue
  if (s !== undefined) return s
  const b = v.bool_value ?? v.boolValue
  if (b !== undefined) return b
  const i = v.int_value ?? v.intValue
  if (i !== undefined) return Number(i)
  const d = v.double_value ?? v.doubleValue
  if (d !== undefined) return d
  const a = v.array_value ?? v.arrayValue
  if (a) return (a.values ?? []).map(anyValue)
  return undefined
}

const attrs = (list: Any[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValue(kv.value)]))
const hex = (b: Uint8Array | string | undefined) => (typeof b === 'string' ? b : b?.length ? Buffer.from(b).toString('hex') : '')

function flatten(req: Any): ReceivedSpan[] {
  const out: ReceivedSpan[] = []
  for (const rs of req.resource_spans ?? req.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes)
    for (const ss of rs.scope_spans ?? rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: hex(s.trace_id ?? s.traceId),
          spanId: hex(s.span_id ?? s.spanId),
          parentSpanId: hex(s.parent_span_id ?? s.parentSpanId),
          name: s.name,
          kind: s.kind,
          startNs: BigInt(String(s.start_time_unix_nano ?? s.startTimeUnixNano)),
          endNs: BigInt(String(s.end_time_unix_nano ?? s.endTimeUnixNano)),
          attributes: attrs(s.attributes),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          resource,
        })
  }
  return out
}

/** The spans of one OTLP export body (protobuf or JSON, by content type). */
export function decodeOtlp(body: Uint8Array, contentType: string): ReceivedSpan[] {
  const decoded: Any = contentType.includes('protobuf')
    ? Request.toObject(Request.decode(body), { longs: String, bytes: Array, defaults: false })
    : JSON.parse(new TextDecoder().decode(body))
  return flatten(decoded)
}

export interface OtlpReceiver {
  url: string
  spans: ReceivedSpan[]
  /** Content types of the export requests received. */
  contentTypes: string[]
  headers: Headers[]
  /** The export bodies as received, as text (readable with OTEL_EXPORTER_OTLP_PROTOCOL=http/json). */
  bodies: string[]
  /** Resolves once at least `n` spans have arrived. */
  waitFor(n: number, ms?: number): Promise<ReceivedSpan[]>
  stop(): Promise<void>
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const contentTypes: string[] = []
  const headers: Headers[] = []
  const bodies: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      if (req.method !== 'POST' || new URL(req.url).pathname !== '/v1/traces') return new Response('not found', { status: 404 })
      const type = req.headers.get('content-type') ?? ''
      contentTypes.push(type)
      headers.push(req.headers)
      const body = new Uint8Array(await req.arrayBuffer())
      bodies.push(new TextDecoder().decode(body))
      spans.push(...decodeOtlp(body, type))
      return new Response(type.includes('protobuf') ? new Uint8Array(0) : '{}', { headers: { 'content-type': type } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    contentTypes,
    headers,
    bodies,
    async waitFor(n, ms = 5000) {
      const deadline = Date.now() + ms
      while (spans.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} spans, got ${spans.length}`)
        await Bun.sleep(10)
      }
      return spans
    },
    stop: () => server.stop(true),
  }
}
