// Incremental decoder of AWS's binary event-stream framing (`application/vnd.amazon.eventstream`), both CRCs checked.
//
// A frame: total length (u32 BE), headers length (u32 BE), CRC32 of those 8 bytes; headers; payload;
// CRC32 of everything before it. A header: name length (u8), name (UTF-8), value type (u8), value.
// Bytes arrive in any chunking; a frame is decoded once all of it is there. A broken frame is a
// `fault` (the adapter's provider_error) and ends decoding: nothing after it can be trusted.

/** Largest frame accepted, prelude and CRCs included (AWS's own limit for a message). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024
/** Largest headers section accepted (AWS's limit). */
export const MAX_HEADERS_BYTES = 128 * 1024

const PRELUDE = 12
const MIN_FRAME = PRELUDE + 4

export type HeaderValue = boolean | number | bigint | string | Uint8Array | Date

export type EventStreamFrame =
  | { type: 'event'; eventType: string; headers: Record<string, HeaderValue>; payload: Uint8Array }
  | { type: 'exception'; exceptionType: string; headers: Record<string, HeaderValue>; payload: Uint8Array }
  | { type: 'error'; errorCode: string; errorMessage: string; headers: Record<string, HeaderValue>; payload: Uint8Array }
  | { type: 'fault'; message: string }

const utf8 = new TextDecoder('utf-8', { fatal: true })

const crc32 = (bytes: Uint8Array): number => Bun.hash.crc32(bytes) >>> 0

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`

/** Thrown inside header parsing, turned into a fault by the decoder. */
class FrameFault extends Error {}

function parseHeaders(view: DataView, bytes: Uint8Array, from: number, to: number): Record<string, HeaderValue> {
  const out: Record<string, HeaderValue> = {}
  let at = from
  const need = (n: number) => {
    if (at + n > to) throw new FrameFault('a header runs past the headers section')
  }
  while (at < to) {
    need(1)
    const nameLen = bytes[at++] ?? 0
    if (nameLen === 0) throw new FrameFault('a header has an empty name')
    need(nameLen + 1)
    const name = utf8.decode(bytes.subarray(at, at + nameLen))
    at += nameLen
    const type = bytes[at++]
    let value: HeaderValue
    switch (type) {
      case 0: value = true; break
      case 1: value = false; break
      case 2: need(1); value = view.getInt8(at); at += 1; break
      case 3: need(2); value = view.getInt16(at); at += 2; break
      case 4: need(4); value = view.getInt32(at); at += 4; break
      case 5: need(8); value = view.getBigInt64(at); at += 8; break
      case 6:
      case 7: {
        need(2)
        const len = view.getUint16(at)
        at += 2
        need(len)
        const raw = bytes.subarray(at, at + len)
        value = type === 6 ? raw : utf8.decode(raw)
        at += len
        break
      }
      case 8: need(8); value = new Date(Number(view.getBigInt64(at))); at += 8; break
      case 9: {
        need(16)
        const h = Buffer.from(bytes.subarray(at, at + 16)).toString('hex')
        value = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
        at += 16
        break
      }
      default:
        throw new FrameFault(`header "${name}" has unknown value type ${type}`)
    }
    out[name] = value
  }
  return out
}

function classify(headers: Record<string, HeaderValue>, payload: Uint8Array): EventStreamFrame {
  const kind = headers[':message-type']
  const str = (name: string): string | undefined => {
    const v = headers[name]
    return typeof v === 'string' ? v : undefined
  }
  if (kind === 'event') {
    const eventType = str(':event-type')
    return eventType === undefined ? { type: 'fault', message: 'an event frame has no :event-type' } : { type: 'event', eventType, headers, payload }
  }
  if (kind === 'exception') {
    const exceptionType = str(':exception-type')
    return exceptionType === undefined ? { type: 'fault', message: 'an exception frame has no :exception-type' } : { type: 'exception', exceptionType, headers, payload }
  }
  if (kind === 'error') return { type: 'error', errorCode: str(':error-code') ?? 'unknown', errorMessage: str(':error-message') ?? '', headers, payload }
  return { type: 'fault', message: `a frame has ${typeof kind === 'string' ? `an unknown :message-type "${kind}"` : 'no :message-type'}` }
}

/**
 * Feed it the response body's chunks with `push`, then call `end`. Payloads are views into the pushed
 * bytes (not copies): read them before reusing a chunk's buffer.
 */
export class EventStreamDecoder {
  /** Bytes of unfinished frames, kept as received until `need` of them are there (no copy per chunk). */
  private pending: Uint8Array[] = []
  private pendingLen = 0
  private need = PRELUDE
  private failed = false

  /** The frames completed by this chunk; a `fault` is always last and nothing follows it. */
  push(chunk: Uint8Array): EventStreamFrame[] {
    if (this.failed || chunk.length === 0) return []
    this.pending.push(chunk)
    this.pendingLen += chunk.length
    if (this.pendingLen < this.need) return []
    const bytes = this.pending.length === 1 ? chunk : Buffer.concat(this.pending, this.pendingLen)
    const out: EventStreamFrame[] = []
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    let at = 0
    this.need = PRELUDE
    while (bytes.length - at >= PRELUDE) {
      const total = view.getUint32(at)
      const headersLen = view.getUint32(at + 4)
      const preludeCrc = view.getUint32(at + 8)
      const actual = crc32(bytes.subarray(at, at + 8))
      if (actual !== preludeCrc) return this.fail(out, `prelude CRC mismatch (frame says ${hex(preludeCrc)}, bytes give ${hex(actual)})`)
      if (total < MIN_FRAME) return this.fail(out, `frame length ${total} is below the minimum of ${MIN_FRAME}`)
      if (total > MAX_FRAME_BYTES) return this.fail(out, `frame length ${total} is over the ${MAX_FRAME_BYTES}-byte limit`)
      if (headersLen > MAX_HEADERS_BYTES) return this.fail(out, `headers length ${headersLen} is over the ${MAX_HEADERS_BYTES}-byte limit`)
      if (headersLen > total - MIN_FRAME) return this.fail(out, `headers length ${headersLen} does not fit in a ${total}-byte frame`)
      if (bytes.length - at < total) {
        this.need = total
        break
      }
      const messageCrc = view.getUint32(at + total - 4)
      const computed = crc32(bytes.subarray(at, at + total - 4))
      if (computed !== messageCrc) return this.fail(out, `message CRC mismatch (frame says ${hex(messageCrc)}, bytes give ${hex(computed)})`)
      const headersEnd = at + PRELUDE + headersLen
      let headers: Record<string, HeaderValue>
      try {
        headers = parseHeaders(view, bytes, at + PRELUDE, headersEnd)
      } catch (err) {
        return this.fail(out, err instanceof FrameFault ? err.message : 'a header is not valid UTF-8')
      }
      const frame = classify(headers, bytes.subarray(headersEnd, at + total - 4))
      if (frame.type === 'fault') return this.fail(out, frame.message)
      out.push(frame)
      at += total
    }
    const rest = bytes.subarray(at)
    this.pending = rest.length === 0 ? [] : [rest]
    this.pendingLen = rest.length
    return out
  }

  /** The end of the body: a fault if it stopped inside a frame. */
  end(): EventStreamFrame[] {
    if (this.failed || this.pendingLen === 0) return []
    const have = this.pendingLen
    this.pending = []
    this.pendingLen = 0
    this.failed = true
    return [{ type: 'fault', message: `the stream ended inside a frame (${have} bytes left over)` }]
  }

  private fail(out: EventStreamFrame[], message: string): EventStreamFrame[] {
    this.failed = true
    this.pending = []
    this.pendingLen = 0
    out.push({ type: 'fault', message: `event stream: ${message}` })
    return out
  }
}
