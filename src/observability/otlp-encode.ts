// OTLP trace export bodies: ExportTraceServiceRequest as protobuf (the default of OTLP/HTTP) or as
// OTLP/JSON, from gw's finished spans. Field numbers follow opentelemetry-proto's trace/v1 and common/v1.

export type AttrValue = string | number | boolean | string[]

export const SPAN_KIND = { server: 2, client: 3 } as const
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const

export interface SpanData {
  /** 32 hex digits. */
  traceId: string
  /** 16 hex digits. */
  spanId: string
  parentSpanId: string | undefined
  traceState: string | undefined
  name: string
  kind: (typeof SPAN_KIND)[keyof typeof SPAN_KIND]
  /** Unix epoch nanoseconds. */
  startNs: bigint
  endNs: bigint
  attributes: Record<string, AttrValue>
  status: { code: (typeof STATUS_CODE)[keyof typeof STATUS_CODE]; message?: string }
}

export interface ExportResource {
  attributes: Record<string, AttrValue>
  scope: { name: string; version: string }
}

// --- protobuf -------------------------------------------------------------------------------

const utf8 = new TextEncoder()

/** The value of a lowercase hex digit's char code. */
const nibble = (c: number) => (c <= 57 ? c - 48 : c - 87)

/** Bytes a varint of `v` takes. */
function varintSize(v: number): number {
  let n = 1
  while (v > 0x7f) {
    v = Math.floor(v / 128)
    n++
  }
  return n
}

/**
 * One growable buffer with the few protobuf wire operations the trace messages need. Sub-messages are
 * written in place after a one-byte length slot, which is widened (the body moved up) when needed, so
 * nesting costs no extra buffers.
 */
class ProtoWriter {
  private buf: Uint8Array<ArrayBuffer> = new Uint8Array(64 * 1024)
  private view = new DataView(this.buf.buffer)
  private len = 0

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.len + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.len))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  private rawVarint(v: number): void {
    while (v > 0x7f) {
      this.buf[this.len++] = (v & 0x7f) | 0x80
      v = Math.floor(v / 128)
    }
    this.buf[this.len++] = v
  }

  private tag(field: number, wire: 0 | 1 | 2): void {
    this.ensure(20)
    this.rawVarint(field * 8 + wire)
  }

  string(field: number, s: string): void {
    this.tag(field, 2)
    // ASCII (attribute keys, ids, model names) is copied byte by byte; anything else goes through the encoder.
    if (s.length < 128) {
      this.ensure(s.length + 1)
      const lenAt = this.len++
      let ascii = true
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i)
        if (c > 0x7f) {
          ascii = false
          break
        }
        this.buf[this.len++] = c
      }
      if (ascii) {
        this.buf[lenAt] = s.length
        return
      }
      this.len = lenAt
    }
    const bytes = utf8.encode(s)
    this.ensure(bytes.length + 10)
    this.rawVarint(bytes.length)
    this.buf.set(bytes, this.len)
    this.len += bytes.length
  }

  /** Bytes given as hex digits (trace and span ids). */
  hex(field: number, hex: string): void {
    const n = hex.length >> 1
    this.tag(field, 2)
    this.ensure(n + 1)
    this.rawVarint(n)
    for (let i = 0; i < n; i++) this.buf[this.len++] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1))
  }

  fixed64(field: number, v: bigint): void {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setBigUint64(this.len, v, true)
    this.len += 8
  }

  double(field: number, v: number): void {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setFloat64(this.len, v, true)
    this.len += 8
  }

  int64(field: number, v: number): void {
    this.tag(field, 0)
    if (v >= 0) this.rawVarint(v)
    else {
      // Two's complement over 64 bits: ten bytes.
      let big = BigInt.asUintN(64, BigInt(v))
      while (big > 0x7fn) {
        this.buf[this.len++] = Number(big & 0x7fn) | 0x80
        big >>= 7n
      }
      this.buf[this.len++] = Number(big)
    }
  }

  uint(field: number, v: number): void {
    this.tag(field, 0)
    this.rawVarint(v)
  }

  /** Starts a length-delimited sub-message; returns what end() needs. */
  begin(field: number): number {
    this.tag(field, 2)
    return this.len++
  }

  /** Ends the sub-message begun at `lenAt`: writes its length, widening the slot when it needs more than a byte. */
  end(lenAt: number): void {
    const size = this.len - lenAt - 1
    if (size < 128) {
      this.buf[lenAt] = size
      return
    }
    const extra = varintSize(size) - 1
    this.ensure(extra)
    this.buf.copyWithin(lenAt + 1 + extra, lenAt + 1, this.len)
    const end = this.len + extra
    this.len = lenAt
    this.rawVarint(size)
    this.len = end
  }

  finish(): Uint8Array<ArrayBuffer> {
    return this.buf.slice(0, this.len)
  }
}

function protoAnyValue(w: ProtoWriter, v: AttrValue): void {
  if (typeof v === 'string') w.string(1, v)
  else if (typeof v === 'boolean') w.uint(2, v ? 1 : 0)
  else if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) w.int64(3, v)
    else w.double(4, v)
  } else {
    const arr = w.begin(5)
    for (const item of v) {
      const av = w.begin(1)
      w.string(1, item)
      w.end(av)
    }
    w.end(arr)
  }
}

function protoAttributes(w: ProtoWriter, field: number, attrs: Record<string, AttrValue>): void {
  for (const key in attrs) {
    const kv = w.begin(field)
    w.string(1, key)
    const av = w.begin(2)
    protoAnyValue(w, attrs[key] as AttrValue)
    w.end(av)
    w.end(kv)
  }
}

export function encodeProtobuf(resource: ExportResource, spans: readonly SpanData[]): Uint8Array<ArrayBuffer> {
  const w = new ProtoWriter()
  const rs = w.begin(1)
  const r = w.begin(1)
  protoAttributes(w, 1, resource.attributes)
  w.end(r)
  const ss = w.begin(2)
  const scope = w.begin(1)
  w.string(1, resource.scope.name)
  w.string(2, resource.scope.version)
  w.end(scope)
  for (const s of spans) {
    const sp = w.begin(2)
    w.hex(1, s.traceId)
    w.hex(2, s.spanId)
    if (s.traceState) w.string(3, s.traceState)
    if (s.parentSpanId) w.hex(4, s.parentSpanId)
    w.string(5, s.name)
    w.uint(6, s.kind)
    w.fixed64(7, s.startNs)
    w.fixed64(8, s.endNs)
    protoAttributes(w, 9, s.attributes)
    const st = w.begin(15)
    if (s.status.message) w.string(2, s.status.message)
    if (s.status.code) w.uint(3, s.status.code)
    w.end(st)
    w.end(sp)
  }
  w.end(ss)
  w.end(rs)
  return w.finish()
}

// --- OTLP/JSON ------------------------------------------------------------------------------

function jsonAnyValue(v: AttrValue): Record<string, unknown> {
  if (typeof v === 'string') return { stringValue: v }
  if (typeof v === 'boolean') return { boolValue: v }
  if (typeof v === 'number') return Number.isSafeInteger(v) ? { intValue: String(v) } : { doubleValue: v }
  return { arrayValue: { values: v.map((s) => ({ stringValue: s })) } }
}

const jsonAttributes = (attrs: Record<string, AttrValue>) => Object.entries(attrs).map(([key, v]) => ({ key, value: jsonAnyValue(v) }))

/** OTLP/JSON: ids as hex, enums as numbers, 64-bit integers as strings. */
export function encodeJson(resource: ExportResource, spans: readonly SpanData[]): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: jsonAttributes(resource.attributes) },
        scopeSpans: [
          {
            scope: resource.scope,
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.traceState ? { traceState: s.traceState } : {}),
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: String(s.startNs),
              endTimeUnixNano: String(s.endNs),
              attributes: jsonAttributes(s.attributes),
              status: s.status,
            })),
          },
        ],
      },
    ],
  })
}
