// Encoder of AWS's binary event-stream frames (`application/vnd.amazon.eventstream`) for the fake Bedrock and the tests.
//
// Frame layout per AWS's event-stream encoding (as the AWS SDKs' eventstream codecs implement it): total
// length and headers length (u32 BE), CRC32 of those 8 bytes, headers, payload, CRC32 of all before it.
// Bedrock's ConverseStream sends each event as a frame with `:event-type`, `:content-type`
// (`application/json`) and `:message-type` (`event`), the JSON of that member as payload (plus a `p`
// padding field); a modelled error as `:message-type` `exception` with `:exception-type`.

export type HeaderSpec =
  | { name: string; type: 'true' | 'false' }
  | { name: string; type: 'byte' | 'short' | 'integer'; value: number }
  | { name: string; type: 'long'; value: bigint }
  | { name: string; type: 'bytes'; value: Uint8Array }
  | { name: string; type: 'string'; value: string }
  | { name: string; type: 'timestamp'; value: Date }
  | { name: string; type: 'uuid'; value: string }

const TYPE_CODE = { true: 0, false: 1, byte: 2, short: 3, integer: 4, long: 5, bytes: 6, string: 7, timestamp: 8, uuid: 9 } as const

const utf8 = new TextEncoder()

function headerBytes(h: HeaderSpec): Uint8Array {
  const name = utf8.encode(h.name)
  let value: Uint8Array
  switch (h.type) {
    case 'true':
    case 'false':
      value = new Uint8Array(0)
      break
    case 'byte':
      value = new Uint8Array(1)
      new DataView(value.buffer).setInt8(0, h.value)
      break
    case 'short':
      value = new Uint8Array(2)
      new DataView(value.buffer).setInt16(0, h.value)
      break
    case 'integer':
      value = new Uint8Array(4)
      new DataView(value.buffer).setInt32(0, h.value)
      break
    case 'long':
    case 'timestamp':
      value = new Uint8Array(8)
      new DataView(value.buffer).setBigInt64(0, h.type === 'long' ? h.value : BigInt(h.value.getTime()))
      break
    case 'bytes':
    case 'string': {
      const raw = h.type === 'bytes' ? h.value : utf8.encode(h.value)
      value = new Uint8Array(2 + raw.length)
      new DataView(value.buffer).setUint16(0, raw.length)
      value.set(raw, 2)
      break
    }
    case 'uuid':
      value = Uint8Array.from(Buffer.from(h.value.replace(/-/g, ''), 'hex'))
      break
  }
  const out = new Uint8Array(1 + name.length + 1 + value.length)
  out[0] = name.length
  out.set(name, 1)
  out[1 + name.length] = TYPE_CODE[h.type]
  out.set(value, 2 + name.length)
  return out
}

/** One frame: headers in the order given, the payload as is. */
export function encodeFrame(headers: HeaderSpec[], payload: Uint8Array | string): Uint8Array {
  const hs = headers.map(headerBytes)
  const headersLen = hs.reduce((n, h) => n + h.length, 0)
  const body = typeof payload === 'string' ? utf8.encode(payload) : payload
  const total = 12 + headersLen + body.length + 4
  const out = new Uint8Array(total)
  const view = new DataView(out.buffer)
  view.setUint32(0, total)
  view.setUint32(4, headersLen)
  view.setUint32(8, Bun.hash.crc32(out.subarray(0, 8)) >>> 0)
  let at = 12
  for (const h of hs) {
    out.set(h, at)
    at += h.length
  }
  out.set(body, at)
  view.setUint32(total - 4, Bun.hash.crc32(out.subarray(0, total - 4)) >>> 0)
  return out
}

const str = (name: string, value: string): HeaderSpec => ({ name, type: 'string', value })

/** Bedrock's random-length padding field `p` (letters of the alphabet), which clients ignore. */
export const padding = (n: number): string => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.slice(0, n)

/** A ConverseStream event frame: `eventType` (e.g. `contentBlockDelta`) with its member's JSON. */
export function eventFrame(eventType: string, body: object, pad = 0): Uint8Array {
  const json = pad > 0 ? { ...body, p: padding(pad) } : body
  return encodeFrame([str(':event-type', eventType), str(':content-type', 'application/json'), str(':message-type', 'event')], JSON.stringify(json))
}

/** A modelled error in the stream (e.g. `throttlingException`, `modelStreamErrorException`). */
export function exceptionFrame(exceptionType: string, message: string): Uint8Array {
  return encodeFrame([str(':exception-type', exceptionType), str(':content-type', 'application/json'), str(':message-type', 'exception')], JSON.stringify({ message }))
}

/** An unmodelled error frame (`:message-type` `error`). */
export function errorFrame(code: string, message: string): Uint8Array {
  return encodeFrame([str(':error-code', code), str(':error-message', message), str(':message-type', 'error')], '')
}
