// The light pass for OpenAI-to-OpenAI streams: plain text chunks go out as sent with only the model
// renamed; anything that needs reading (finish, usage, refusal, tool calls, other choices, errors) is read.

import { expect, test } from 'bun:test'
import { OpenAIStyleStream, mapOpenAIFinishReason } from '../../src/providers/openai/response'

const opts = { mapFinish: mapOpenAIFinishReason, passThrough: true }
const ev = (data: unknown) => ({ event: undefined, data: typeof data === 'string' ? data : JSON.stringify(data) })
const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o-2024-08-06',
  system_fingerprint: 'fp_1',
  choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
  ...extra,
})

test('text chunks after the first pass on as sent, the model renamed; the text survives a read', () => {
  const s = new OpenAIStyleStream(opts, 'openai/gpt-4o')
  const first = s.push(ev(chunk({ delta: { role: 'assistant', content: '' } })))
  expect(first.map((p) => p.type)).toEqual(['meta', 'choices'])
  // Text that spells gw's markers is escaped inside its JSON string, so it never looks like one.
  const tricky = 'He said "finish_reason":"stop" and "usage":{} then "model":"x" \\ done'
  const [part] = s.push(ev(chunk({ delta: { content: tricky } }, { usage: null })))
  expect(part?.type).toBe('raw')
  const json = JSON.parse((part as { json: string }).json)
  expect(json).toEqual({ ...chunk({ delta: { content: tricky } }, { usage: null }), model: 'openai/gpt-4o' })
})

test('chunks that need a full read are read: finish, usage, refusal, tool calls, a second choice, errors', () => {
  const s = new OpenAIStyleStream(opts, 'openai/gpt-4o')
  s.push(ev(chunk({ delta: { role: 'assistant', content: '' } })))
  const types = (data: unknown) => s.push(ev(data)).map((p) => p.type)
  expect(types(chunk({ delta: { content: 'bye' }, finish_reason: 'stop' }))).toEqual(['choices'])
  expect(types({ ...chunk({ delta: {} }), choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })).toEqual(['usage'])
  expect(types(chunk({ delta: { refusal: 'No.' } }))).toEqual(['choices'])
  expect(types(chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":"b"}' } }] } }))).toEqual(['choices'])
  expect(types({ ...chunk({ delta: { content: 'x' } }), choices: [{ index: 1, delta: { content: 'x' }, finish_reason: null }] })).toEqual(['choices'])
  expect(types({ error: { message: 'overloaded' } })).toEqual(['failure'])
  expect(types(chunk({ delta: { content: '' } }))).toEqual(['choices'])
  expect(types('[DONE]')).toEqual(['end'])
})

test('without a name to pass on as (Mistral), every chunk is read', () => {
  const s = new OpenAIStyleStream(opts)
  s.push(ev(chunk({ delta: { role: 'assistant', content: '' } })))
  expect(s.push(ev(chunk({ delta: { content: 'hi' } }))).map((p) => p.type)).toEqual(['choices'])
})

test('the light pass reads what it cannot be sure of: spaced JSON, a value "error", a cut chunk, another model field, a choice index 01', () => {
  const s = new OpenAIStyleStream(opts, 'openai/gpt-4o')
  s.push(ev(chunk({ delta: { role: 'assistant', content: '' } })))
  const types = (data: string) => s.push(ev(data)).map((p) => p.type)
  const plain = JSON.stringify(chunk({ delta: { content: 'hi' } }))
  expect(types(plain)).toEqual(['raw'])
  // JSON with spaces (another server's serialiser): read, whatever it holds.
  expect(types(JSON.stringify(chunk({ delta: { content: 'hi' } }), null, 1))).toEqual(['choices'])
  expect(types(plain.replace('"content":"hi"', '"content": "hi"'))).toEqual(['choices'])
  // An object that says it is an error (vLLM's form in a stream) is read.
  expect(types(plain.replace('"object":"chat.completion.chunk"', '"object":"error"'))).toEqual(['choices'])
  // Cut short, or a bracket too many: read (and then failed or acted on by the full read).
  expect(types(plain.slice(0, -3))).toEqual(['failure'])
  expect(types(`${plain.slice(0, -1)}]}`)).toEqual(['failure'])
  // The model field in another form than the first chunk's: read (its model is then the client's).
  expect(types(plain.replace('"model":"gpt-4o-2024-08-06"', '"model":"gpt-4o"'))).toEqual(['choices'])
  expect(types(plain.replace('"index":0', '"index":01'))).not.toEqual(['raw'])
  // Text holding quotes, backslashes and brackets passes on unchanged.
  const text = 'a "quoted" {braced} [bracketed] \\ back\\slash \u00e9\u4e2d'
  const [part] = s.push(ev(JSON.stringify(chunk({ delta: { content: text } }))))
  expect(part?.type).toBe('raw')
  expect(JSON.parse((part as { json: string }).json).choices[0].delta.content).toBe(text)
})
