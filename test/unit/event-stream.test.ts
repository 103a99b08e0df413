// AWS event-stream decoding (src/providers/bedrock/event-stream.ts): any chunking, every header type, both CRCs, the frame cap.

import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { EventStreamDecoder, type EventStreamFrame, MAX_FRAME_BYTES } from '../../src/providers/bedrock/event-stream'
import { encodeFrame, errorFrame, eventFrame, exceptionFrame, type HeaderSpec } from '../fakes/event-stream-encode'

const text = new TextDecoder()
const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts))

/** Decodes `bytes` cut at `cuts`, then ends the input. */
function decode(bytes: Uint8Array, cuts: number[] = []): EventStreamFrame[] {
  const d = new EventStreamDecoder()
  const out: EventStreamFrame[] = []
  let from = 0
  for (const at of [...cuts, bytes.length]) {
    out.push(...d.push(bytes.slice(from, at)))
    from = at
  }
  return [...out, ...d.end()]
}

const json = (f: EventStreamFrame | undefined): unknown => (f && f.type !== 'fault' ? JSON.parse(text.decode(f.payload)) : undefined)

describe('event-stream framing', () => {
  test('every header value type round-trips', () => {
    const headers: HeaderSpec[] = [
      { name: ':message-type', type: 'string', value: 'event' },
      { name: ':event-type', type: 'string', value: 'chunk' },
      { name: 't', type: 'true' },
      { name: 'f', type: 'false' },
      { name: 'b', type: 'byte', value: -7 },
      { name: 's', type: 'short', value: -1234 },
      { name: 'i', type: 'integer', value: 2_000_000_000 },
      { name: 'l', type: 'long', value: -(2n ** 62n) },
      { name: 'bytes', type: 'bytes', value: Uint8Array.of(0, 255, 7) },
      { name: 'ts', type: 'timestamp', value: new Date(Date.UTC(2026, 10, 27, 3, 0, 0, 123)) },
      { name: 'id', type: 'uuid', value: '0f8fad5b-d9cb-469f-a165-70867728950e' },
      { name: 'ü', type: 'string', value: 'ünïcode ✓' },
    ]
    const [frame, ...rest] = decode(encodeFrame(headers, 'payload bytes'))
    expect(rest).toEqual([])
    expect(frame?.type).toBe('event')
    if (frame?.type !== 'event') return
    expect(frame.eventType).toBe('chunk')
    expect(frame.headers).toEqual({
      ':message-type': 'event', ':event-type': 'chunk', t: true, f: false, b: -7, s: -1234, i: 2_000_000_000, l: -(2n ** 62n),
      bytes: Uint8Array.of(0, 255, 7), ts: new Date(Date.UTC(2026, 10, 27, 3, 0, 0, 123)), id: '0f8fad5b-d9cb-469f-a165-70867728950e', ü: 'ünïcode ✓',
    })
    expect(text.decode(frame.payload)).toBe('payload bytes')
  })

  test('a frame recorded from Bedrock (InvokeModelWithResponseStream chunk) decodes with its CRCs', () => {
    // The bytes of one frame Bedrock sent, as quoted in AI21Labs/ai21-python
    // tests/unittests/test_aws_stream_decoder.py (commit 661c5f574a3128749fb8316e950e0b2602d8c8d0).
    const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0))
    const frame = concat([
      latin1('\x00\x00\x01\x80\x00\x00\x00K\xfe\x96$F\x0b:event-type\x07\x00\x05chunk\r:content-type\x07\x00'),
      latin1('\x10application/json\r:message-type\x07\x00\x05event{'),
      latin1('"bytes":"eyJpZCI6ImNtcGwtOTgxZjdmMTc2YWQ0NDE0NTliOTRlNDVlZTI5MmEzMjEiLCJjaG9pY2VzIjpbeyJpbmRleC'),
      latin1('I6MCwiZGVsdGEiOnsicm9sZSI6ImFzc2lzdGFudCJ9LCJmaW5pc2hfcmVhc29uIjpudWxsfV0sInVzYWdlIjp7InByb21wd'),
      latin1('F90b2tlbnMiOjQ0LCJ0b3RhbF90b2tlbnMiOjQ0LCJjb21wbGV0aW9uX3Rva2VucyI6MH19","p":"abcdefghijklmnopq'),
      latin1('rstuv"}5\xca\xa7\x98'),
    ])
    expect(frame.length).toBe(0x180)
    const frames = decode(concat([frame, frame]), [7, 400])
    expect(frames.map((f) => f.type)).toEqual(['event', 'event'])
    const body = json(frames[0]) as { bytes: string; p: string }
    expect(body.p).toBe('abcdefghijklmnopqrstuv')
    expect(JSON.parse(Buffer.from(body.bytes, 'base64').toString())).toMatchObject({ usage: { prompt_tokens: 44 } })
  })

  test('a ConverseStream answer decodes to its events, usage in metadata', () => {
    const events: [string, object][] = [
      ['messageStart', { role: 'assistant' }],
      ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } }],
      ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: ' from' } }],
      ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: ' Bedrock.' } }],
      ['contentBlockStop', { contentBlockIndex: 0 }],
      ['contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_abc', name: 'get_weather' } } }],
      ['contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }],
      ['contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Paris"}' } } }],
      ['contentBlockStop', { contentBlockIndex: 1 }],
      ['messageStop', { stopReason: 'tool_use' }],
      ['metadata', { usage: { inputTokens: 25, outputTokens: 12, totalTokens: 37, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 }, metrics: { latencyMs: 412 } }],
    ]
    const bytes = concat(events.map(([t, b], i) => eventFrame(t, b, 5 + ((i * 7) % 40))))
    const frames = decode(bytes, [3, 11, 12, 100, 101, 400])
    expect(frames.map((f) => (f.type === 'event' ? f.eventType : f.type))).toEqual(events.map(([t]) => t))
    const texts = frames.flatMap((f) => {
      const d = (json(f) as { delta?: { text?: string } }).delta
      return d?.text === undefined ? [] : [d.text]
    })
    expect(texts.join('')).toBe('Hello from Bedrock.')
    expect(json(frames.at(-1))).toMatchObject({ usage: { inputTokens: 25, outputTokens: 12, totalTokens: 37 } })
    expect(json(frames[0])).toMatchObject({ role: 'assistant', p: 'abcde' })
  })

  test('exceptions and errors in the stream keep their type', () => {
    const frames = decode(concat([eventFrame('messageStart', { role: 'assistant' }), exceptionFrame('throttlingException', 'Too many tokens, please wait before trying again.')]))
    expect(frames[1]).toMatchObject({ type: 'exception', exceptionType: 'throttlingException' })
    expect(json(frames[1])).toEqual({ message: 'Too many tokens, please wait before trying again.' })
    expect(decode(errorFrame('InternalFailure', 'boom'))).toMatchObject([{ type: 'error', errorCode: 'InternalFailure', errorMessage: 'boom' }])
  })

  test('any chunking of any frames gives the same frames (property)', () => {
    const header = fc.oneof(
      fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }), type: fc.constant('string' as const), value: fc.string({ maxLength: 40 }) }),
      fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }), type: fc.constant('integer' as const), value: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
      fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }), type: fc.constant('bytes' as const), value: fc.uint8Array({ maxLength: 30 }) }),
      fc.record({ name: fc.string({ minLength: 1, maxLength: 20 }), type: fc.constantFrom('true' as const, 'false' as const) }),
    )
    const frame = fc.record({ eventType: fc.string({ minLength: 1, maxLength: 30 }), extra: fc.array(header, { maxLength: 5 }), payload: fc.uint8Array({ maxLength: 300 }) })
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 12 }), (specs, rawCuts) => {
        const extra = (hs: HeaderSpec[]) => hs.filter((h) => !h.name.startsWith(':') && new TextEncoder().encode(h.name).length < 256)
        const encoded = specs.map((s) =>
          encodeFrame([{ name: ':message-type', type: 'string', value: 'event' }, { name: ':event-type', type: 'string', value: s.eventType }, ...extra(s.extra as HeaderSpec[])], s.payload),
        )
        const bytes = concat(encoded)
        const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
        const whole = decode(bytes)
        const cut = decode(bytes, cuts)
        expect(cut).toEqual(whole)
        expect(whole.map((f) => (f.type === 'event' ? f.eventType : f.type))).toEqual(specs.map((s) => s.eventType))
        expect(whole.map((f) => (f.type === 'event' ? [...f.payload] : []))).toEqual(specs.map((s) => [...s.payload]))
      }),
      { numRuns: 300 },
    )
  })

  test('a corrupted prelude CRC is a fault, and nothing after it is decoded', () => {
    const good = eventFrame('messageStart', { role: 'assistant' })
    const bad = good.slice()
    bad[9] = (bad[9] ?? 0) ^ 0x01
    const frames = decode(concat([good, bad, good]))
    expect(frames.map((f) => f.type)).toEqual(['event', 'fault'])
    expect(frames[1]).toMatchObject({ type: 'fault', message: expect.stringContaining('prelude CRC mismatch') })
  })

  test('a changed length is caught by the prelude CRC before waiting for the bytes', () => {
    const bad = eventFrame('messageStart', { role: 'assistant' })
    bad[2] = 0x10
    expect(new EventStreamDecoder().push(bad.slice(0, 12))).toMatchObject([{ type: 'fault', message: expect.stringContaining('prelude CRC') }])
  })

  test('a corrupted payload byte fails the message CRC', () => {
    const bad = eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } })
    bad[bad.length - 10] = (bad[bad.length - 10] ?? 0) ^ 0x20
    expect(decode(bad, [5, 30])).toMatchObject([{ type: 'fault', message: expect.stringContaining('message CRC mismatch') }])
  })

  test(`a frame over ${MAX_FRAME_BYTES} bytes is refused from its prelude`, () => {
    const prelude = new Uint8Array(12)
    const view = new DataView(prelude.buffer)
    view.setUint32(0, MAX_FRAME_BYTES + 1)
    view.setUint32(4, 0)
    view.setUint32(8, Bun.hash.crc32(prelude.subarray(0, 8)) >>> 0)
    expect(new EventStreamDecoder().push(prelude)).toMatchObject([{ type: 'fault', message: expect.stringContaining('limit') }])
  })

  test('a frame without :message-type, or an event without :event-type, is a fault', () => {
    expect(decode(encodeFrame([{ name: ':event-type', type: 'string', value: 'x' }], '{}'))).toMatchObject([{ type: 'fault', message: expect.stringContaining('no :message-type') }])
    expect(decode(encodeFrame([{ name: ':message-type', type: 'string', value: 'event' }], '{}'))).toMatchObject([{ type: 'fault', message: expect.stringContaining(':event-type') }])
  })

  test('a header running past its section is a fault', () => {
    const frame = encodeFrame([{ name: ':message-type', type: 'string', value: 'event' }, { name: ':event-type', type: 'string', value: 'x' }], '')
    // Claim a longer string than the section holds, then fix both CRCs so only the header is wrong.
    const view = new DataView(frame.buffer)
    view.setUint16(12 + 1 + 13 + 1, 200)
    view.setUint32(frame.length - 4, Bun.hash.crc32(frame.subarray(0, frame.length - 4)) >>> 0)
    expect(decode(frame)).toMatchObject([{ type: 'fault', message: expect.stringContaining('runs past') }])
  })

  test('a body that stops inside a frame ends with a fault', () => {
    const good = eventFrame('messageStart', { role: 'assistant' })
    expect(decode(concat([good, good.subarray(0, 20)])).map((f) => f.type)).toEqual(['event', 'fault'])
  })
})
