// The SSE decoder (src/sse/parse.ts): WHATWG line and field rules, whatever the chunking of the bytes.

import { expect, test } from 'bun:test'
import { MAX_SSE_EVENT_CHARS, type SseEvent, SseDecoder } from '../../src/sse/parse'

const utf8 = new TextEncoder()

/** Decodes `text` delivered as `chunks` byte slices, then ends the input. */
function decode(bytes: Uint8Array, cuts: number[]): SseEvent[] {
  const d = new SseDecoder()
  const out: SseEvent[] = []
  let from = 0
  for (const at of [...cuts, bytes.length]) {
    out.push(...d.push(bytes.subarray(from, at)))
    from = at
  }
  return [...out, ...d.end()]
}

/**
 * The rules read straight off the whole text (the reference): lines end at CRLF, LF or CR; a blank
 * line dispatches; `:` starts a comment; a field's value loses one leading space; `data` lines join
 * with LF; an event with no data is not dispatched; the last event is dispatched at the end of input.
 */
function reference(text: string): SseEvent[] {
  const out: SseEvent[] = []
  let event: string | undefined
  let data: string[] = []
  const dispatch = () => {
    if (data.length) out.push({ event, data: data.join('\n') })
    data = []
    event = undefined
  }
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') dispatch()
    else if (line.startsWith(':')) continue
    else {
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      let value = colon === -1 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'data') data.push(value)
      else if (field === 'event') event = value
    }
  }
  dispatch()
  return out
}

test('OpenAI-style data lines, Anthropic-style named events, comments, multi-line data and other fields', () => {
  const text =
    ': keep-alive\n\n' +
    'data: {"a":1}\n\n' +
    'event: message_start\ndata: {"type":"message_start"}\n\n' +
    'id: 7\nretry: 10\nevent:ping\ndata:no space\n\n' +
    'data: line one\ndata:  two spaces\ndata\n\n' +
    'event: empty\n\n' +
    'data: [DONE]\n\n'
  expect(decode(utf8.encode(text), [])).toEqual([
    { event: undefined, data: '{"a":1}' },
    { event: 'message_start', data: '{"type":"message_start"}' },
    { event: 'ping', data: 'no space' },
    { event: undefined, data: 'line one\n two spaces\n' },
    { event: undefined, data: '[DONE]' },
  ])
})

test('CRLF and lone CR line ends, also when the CR and the LF arrive in different chunks', () => {
  const text = 'event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n'
  const bytes = utf8.encode(text)
  const expected = [
    { event: 'a', data: '1' },
    { event: undefined, data: '2' },
    { event: undefined, data: '3' },
  ]
  for (let cut = 0; cut <= bytes.length; cut++) {
    expect(decode(bytes, [cut])).toEqual(expected)
    // An empty read between the CR and the LF (a byte slice with no whole character decodes to nothing too).
    expect(decode(bytes, [cut, cut])).toEqual(expected)
  }
})

test('a last event without its blank line is delivered when the input ends', () => {
  expect(decode(utf8.encode('data: a\n\ndata: b'), [3])).toEqual([
    { event: undefined, data: 'a' },
    { event: undefined, data: 'b' },
  ])
})

test('any chunking of any mix of line ends, fields and multi-byte text gives the events of the whole text', () => {
  // A small seeded generator, so a failure can be replayed.
  let seed = 12345
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const ends = ['\n', '\r\n', '\r']
  const values = ['', ' ', '{"x":1}', ' lead', 'naïve ☕ 日本', 'a:b', '  two']
  const lines = () => {
    const kind = rand(8)
    const v = values[rand(values.length)] as string
    if (kind < 4) return `data:${v}`
    if (kind === 4) return `event:${v}`
    if (kind === 5) return `: ${v}`
    if (kind === 6) return rand(2) ? 'data' : `id:${v}`
    return ''
  }
  for (let run = 0; run < 300; run++) {
    let text = ''
    for (let i = rand(20); i >= 0; i--) text += lines() + (ends[rand(3)] as string)
    const bytes = utf8.encode(text)
    const cuts = Array.from({ length: rand(6) }, () => rand(bytes.length + 1)).sort((a, b) => a - b)
    expect(decode(bytes, cuts)).toEqual(reference(text))
  }
})

test('a line or an event longer than MAX_SSE_EVENT_CHARS is not held: the decoder says so and ignores the rest; events up to it pass', () => {
  const d = new SseDecoder()
  const mib = utf8.encode('x'.repeat(1024 * 1024))
  d.push(utf8.encode('data: '))
  for (let i = 0; i < 7; i++) expect(d.push(mib)).toEqual([])
  expect(d.tooLarge).toBeUndefined()
  expect(d.push(mib)).toEqual([])
  expect(d.tooLarge).toMatch(/longer than 8388608 characters/)
  expect(d.push(utf8.encode('\n\ndata: after\n\n'))).toEqual([])
  expect(d.end()).toEqual([])
  // Many short data lines with no blank line between them add up to one event: capped as well, even
  // when the blank line that would end it comes in the same chunk.
  const lines = new SseDecoder()
  const line = `data: ${'y'.repeat(1024 * 1024)}\n`
  expect(lines.push(utf8.encode(`${line.repeat(9)}\n`))).toEqual([])
  expect(lines.tooLarge).toBeDefined()
  // Just under the cap, in small chunks: one event.
  const big = new SseDecoder()
  const data = 'z'.repeat(MAX_SSE_EVENT_CHARS - 10)
  const bytes = utf8.encode(`data: ${data}\n\n`)
  const out: SseEvent[] = []
  for (let i = 0; i < bytes.length; i += 65_536) out.push(...big.push(bytes.subarray(i, i + 65_536)))
  expect(out.length).toBe(1)
  expect(out[0]?.data.length).toBe(data.length)
  expect(big.tooLarge).toBeUndefined()
})
