// The byte pass for OpenAI-to-chat streams: plain text chunks go out as the upstream's bytes with only
// the model renamed; anything that needs reading (finish, usage, refusal, tool calls, other choices,
// errors, a chunk cut short) is read.

import { expect, test } from 'bun:test'
import type { StreamPart } from '../../src/providers/adapter'
import { OpenAIStyleStream, mapOpenAIFinishReason } from '../../src/providers/openai/response'

const opts = { mapFinish: mapOpenAIFinishReason, passThrough: true }
const utf8 = new TextEncoder()
const text = (b: Uint8Array) => new TextDecoder().decode(b)
/** One SSE event, a `data: ` line per line of its data. */
const data = (d: unknown) => `${(typeof d === 'string' ? d : JSON.stringify(d)).split('\n').map((l) => `data: ${l}`).join('\n')}\n\n`
const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o-2024-08-06',
  system_fingerprint: 'fp_1',
  choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
  ...extra,
})

/** A stream passing bytes, its first chunk read (the pass starts after it). */
function started(name = 'openai/gpt-4o'): { s: OpenAIStyleStream; pass: (events: string) => StreamPart[] } {
  const s = new OpenAIStyleStream(opts, name)
  s.passesBytes = true
  const pass = (events: string) => s.passBytes(utf8.encode(events))
  expect(pass(data(chunk({ delta: { role: 'assistant', content: '' } }))).map((p) => p.type)).toEqual(['meta', 'choices'])
  return { s, pass }
}

const types = (parts: StreamPart[]) => parts.map((p) => p.type)
const passedText = (parts: StreamPart[]) => parts.map((p) => (p.type === 'bytes' ? text(p.bytes) : '')).join('')

test('text chunks after the first go out as sent, the model renamed, in one bytes part per run; the text survives a read', () => {
  const { pass, s } = started()
  // Text that spells gw's markers is escaped inside its JSON string, so it never looks like one.
  const tricky = 'He said "finish_reason":"stop" and "usage":{} then "model":"x" \\ done'
  const events = data(chunk({ delta: { content: tricky } }, { usage: null })) + data(chunk({ delta: { content: 'é中 and more' } }))
  const parts = pass(events)
  expect(parts).toHaveLength(1)
  expect(parts[0]).toMatchObject({ type: 'bytes', content: true })
  const out = passedText(parts)
  expect(out).toBe(events.replaceAll('"model":"gpt-4o-2024-08-06"', '"model":"openai/gpt-4o"'))
  const [a, b] = out.split('\n\n').map((e) => (e ? JSON.parse(e.slice(6)) : undefined))
  expect(a).toEqual({ ...chunk({ delta: { content: tricky } }, { usage: null }), model: 'openai/gpt-4o' })
  expect(b.choices[0].delta.content).toBe('é中 and more')
  // The client's text is what the log reads (src/apis/relay-transcript.ts).
  expect(s.reader).toBe('openai-chat')
})

test('the same name upstream and to the client: the bytes pass unchanged', () => {
  const s = new OpenAIStyleStream(opts, 'gpt-4o-2024-08-06')
  s.passesBytes = true
  s.passBytes(utf8.encode(data(chunk({ delta: { role: 'assistant', content: '' } }))))
  const plain = data(chunk({ delta: { content: 'hi' } })) + data(chunk({ delta: { content: ' there' } }))
  expect(passedText(s.passBytes(utf8.encode(plain)))).toBe(plain)
})

test('chunks that need a full read are read, in order between the runs passed: finish, usage, refusal, tool calls, a second choice, errors', () => {
  const { pass } = started()
  const t = (d: unknown) => types(pass(data(d)))
  expect(t(chunk({ delta: { content: 'bye' }, finish_reason: 'stop' }))).toEqual(['choices'])
  expect(t({ ...chunk({ delta: {} }), choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })).toEqual(['usage'])
  expect(t(chunk({ delta: { refusal: 'No.' } }))).toEqual(['choices'])
  expect(t(chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":"b"}' } }] } }))).toEqual(['choices'])
  expect(t({ ...chunk({ delta: { content: 'x' } }), choices: [{ index: 1, delta: { content: 'x' }, finish_reason: null }] })).toEqual(['choices'])
  expect(t({ error: { message: 'overloaded' } })).toEqual(['failure'])
  expect(t(chunk({ delta: { content: '' } }))).toEqual(['choices'])
  expect(t('[DONE]')).toEqual(['end'])
  const mixed = pass(data(chunk({ delta: { content: 'a' } })) + data(chunk({ delta: { content: 'b' } })) + data(chunk({ delta: {}, finish_reason: 'stop' })) + data(chunk({ delta: { content: 'c' } })) + data('[DONE]'))
  expect(types(mixed)).toEqual(['bytes', 'choices', 'bytes', 'end'])
})

test('before the first chunk is read, and without a name to pass on as (Mistral), every chunk is read', () => {
  const first = new OpenAIStyleStream(opts, 'openai/gpt-4o')
  first.passesBytes = true
  const both = first.passBytes(utf8.encode(data(chunk({ delta: { content: 'hi' } })) + data(chunk({ delta: { content: 'there' } }))))
  expect(types(both)).toEqual(['meta', 'choices', 'bytes'])
  // Mistral's translator stays on decoded events: the attempt never gives it bytes.
  const s = new OpenAIStyleStream(opts)
  s.passesBytes = true
  expect(s.passesBytes).toBe(false)
  expect(s.reader).toBeUndefined()
  expect(new OpenAIStyleStream(opts, 'openai/gpt-4o').reader).toBeUndefined()
})

test('the pass reads what it cannot be sure of: spaced JSON, a value "error", a cut chunk, another model field, a choice index 01, other SSE forms', () => {
  const { pass } = started()
  const t = (events: string) => types(pass(events))
  const plain = JSON.stringify(chunk({ delta: { content: 'hi' } }))
  expect(t(data(plain))).toEqual(['bytes'])
  // JSON with spaces (another server's serialiser): read, whatever it holds.
  expect(t(data(JSON.stringify(chunk({ delta: { content: 'hi' } }), null, 1)))).toEqual(['choices'])
  expect(t(data(plain.replace('"content":"hi"', '"content": "hi"')))).toEqual(['choices'])
  // An object that says it is an error (vLLM's form in a stream) is read.
  expect(t(data(plain.replace('"object":"chat.completion.chunk"', '"object":"error"')))).toEqual(['choices'])
  // Cut short, or a bracket too many: read (and then failed or acted on by the full read).
  expect(t(data(plain.slice(0, -3)))).toEqual(['failure'])
  expect(t(data(`${plain.slice(0, -1)}]}`))).toEqual(['failure'])
  // The model field in another form than the first chunk's: read (its model is then the client's).
  expect(t(data(plain.replace('"model":"gpt-4o-2024-08-06"', '"model":"gpt-4o"')))).toEqual(['choices'])
  expect(t(data(plain.replace('"index":0', '"index":01')))).not.toEqual(['bytes'])
  // An event in another SSE form (named, two data lines, no space after the colon) is read by the decoder.
  expect(t(`event: chunk\ndata: ${plain}\n\n`)).toEqual(['choices'])
  expect(t(`data:${plain}\n\n`)).toEqual(['choices'])
  expect(t(`: a comment\ndata: ${plain}\n\n`)).toEqual(['choices'])
  // Text holding quotes, backslashes and brackets passes on unchanged.
  const tricky = 'a "quoted" {braced} [bracketed] \\ back\\slash \u00e9\u4e2d'
  const parts = pass(data(chunk({ delta: { content: tricky } })))
  expect(types(parts)).toEqual(['bytes'])
  expect(JSON.parse(passedText(parts).slice(6)).choices[0].delta.content).toBe(tricky)
})
