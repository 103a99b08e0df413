// W3C Trace Context: reading an incoming `traceparent` (and `tracestate`), new ids, and the header
// passed upstream (https://www.w3.org/TR/trace-context/).

export interface TraceParent {
  traceId: string
  spanId: string
  sampled: boolean
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** The parent named by a `traceparent` header; undefined when absent or invalid (a new trace starts). */
export function parseTraceParent(header: string | null): TraceParent | undefined {
  if (!header) return undefined
  const m = TRACEPARENT.exec(header.trim().toLowerCase())
  if (!m) return undefined
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined]
  // Version ff is invalid; version 00 has nothing after the flags; later versions may add fields.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 }
}

export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`
}

/** `tracestate` is passed on as received when it is plausible (at most 512 characters, printable). */
export function cleanTraceState(header: string | null): string | undefined {
  if (!header || header.length > 512 || !/^[\x20-\x7e]+$/.test(header)) return undefined
  return header
}

// Random ids drawn from a pooled buffer: one getRandomValues call per 512 ids.
const pool = new Uint8Array(8 * 512)
let poolAt = pool.length

function randomHex(bytes: number): string {
  if (poolAt + bytes > pool.length) {
    crypto.getRandomValues(pool)
    poolAt = 0
  }
  const hex = Buffer.from(pool.buffer, poolAt, bytes).toString('hex')
  poolAt += bytes
  return hex
}

export const newTraceId = () => randomHex(16)
export const newSpanId = () => randomHex(8)
