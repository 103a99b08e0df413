// The translators of src/apis/ on their own, fed shapes like the recorded provider traffic (written
// here by us): Messages and Responses requests into gw's chat form, OpenAI's Responses answer and
// events read back, and the pass-through relay's framing.

import { describe, expect, test } from 'bun:test'
import { parseMessagesInput } from '../../src/apis/anthropic-messages/request'
import { encodeEvent } from '../../src/apis/raw-relay'
import { readResponse, ResponsesEvents } from '../../src/apis/responses/pass-through'
import { parseResponsesInput, toChatMessages } from '../../src/apis/responses/request'
import { SseDecoder } from '../../src/sse/parse'

describe('Messages request → chat form', () => {
  test('system blocks, tool results before text, tool_use, images, thinking dropped, tool choice', () => {
    const { input, native } = parseMessagesInput({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      system: [
        { type: 'text', text: 'You are a CLI.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Be brief.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Look:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'c2ln' },
            { type: 'text', text: 'Reading it.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/a' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'file body' }], is_error: true }, { type: 'text', text: 'go on' }] },
      ],
      tools: [{ name: 'Read', description: 'Reads', input_schema: { type: 'object', properties: {} } }, { type: 'web_search_20250305', name: 'web_search' }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      stream: true,
    })
    const req = input.body
    expect(native.model).toBe('claude-sonnet-4-6')
    expect(req.messages).toEqual([
      { role: 'system', content: 'You are a CLI.\nBe brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] },
      { role: 'assistant', content: 'Reading it.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/a"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'Error: file body' },
      { role: 'user', content: 'go on' },
    ])
    expect(req.tools).toEqual([{ type: 'function', function: { name: 'Read', description: 'Reads', parameters: { type: 'object', properties: {} } } }])
    expect(req).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false, stop: ['END'], max_tokens: 1024, stream: true })
  })
})

describe('Responses request → chat form', () => {
  test('instructions, a function call after assistant text, its output, structured output, effort', () => {
    const req = parseResponsesInput({
      model: 'anthropic/claude-sonnet-4-6',
      instructions: 'Be terse.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Capital of PotatoLand?' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_capital', arguments: '{"country":"PotatoLand"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'Potato City' },
        { type: 'reasoning', id: 'rs_1', summary: [] },
      ],
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning: { effort: 'low' },
      max_output_tokens: 300,
    }).input.body
    expect(req.messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Capital of PotatoLand?' },
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_capital', arguments: '{"country":"PotatoLand"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Potato City' },
    ])
    expect(req).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning_effort: 'low',
      max_tokens: 300,
    })
  })

  test('a string input is one user message; function calls with no assistant text open an assistant turn', () => {
    expect(toChatMessages('hi')).toEqual([{ role: 'user', content: 'hi' }])
    expect(toChatMessages([{ type: 'function_call', call_id: 'c', name: 'f', arguments: '' }])).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ])
  })
})

describe('OpenAI Responses answers read back', () => {
  test('a function-call response: the call, tool_calls finish, usage with cached and reasoning tokens', () => {
    const c = readResponse({
      id: 'resp_1',
      object: 'response',
      status: 'completed',
      output: [{ id: 'fc_1', type: 'function_call', status: 'completed', arguments: '{"country":"PotatoLand"}', call_id: 'call_1', name: 'get_capital' }],
      usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 8 }, output_tokens: 18, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 58 },
    })
    expect(c.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: 'call_1', function: { name: 'get_capital' } }] } })
    expect(c.usage).toEqual({
      prompt_tokens: 40,
      completion_tokens: 18,
      total_tokens: 58,
      prompt_tokens_details: { cached_tokens: 8 },
      completion_tokens_details: { reasoning_tokens: 3 },
    })
  })

  test('a streamed function call: tool-call deltas, then finish, usage and the end on response.completed', () => {
    const t = new ResponsesEvents()
    const ev = (type: string, data: object) => ({ event: type, data: JSON.stringify({ type, ...data }) })
    const parts = [
      ev('response.created', { response: { status: 'in_progress', output: [] } }),
      ev('response.output_item.added', { output_index: 1, item: { type: 'function_call', call_id: 'call_9', name: 'simple_tool', arguments: '' } }),
      ev('response.function_call_arguments.delta', { output_index: 1, delta: '{"number":' }),
      ev('response.function_call_arguments.delta', { output_index: 1, delta: '"5"}' }),
      ev('response.completed', { response: { status: 'completed', output: [], usage: { input_tokens: 5, output_tokens: 7 } } }),
    ].flatMap((e) => t.push(e))
    expect(parts.map((p) => p.type)).toEqual(['choices', 'choices', 'choices', 'choices', 'usage', 'end'])
    expect(parts[0]).toMatchObject({ choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_9', function: { name: 'simple_tool' } }] } }] })
    expect(parts[3]).toMatchObject({ choices: [{ finish_reason: 'tool_calls' }] })
  })

  test('error and response.failed events are failures', () => {
    const t = new ResponsesEvents()
    const [p] = t.push({ event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'insufficient_quota', code: 'insufficient_quota', message: 'quota' } }) })
    expect(p).toMatchObject({ type: 'failure', failure: { kind: 'provider_error' } })
  })
})

test('the relay frames each event as the decoder read it (named or not, one or several data lines)', () => {
  const events = [
    { event: 'message_start', data: '{"type":"message_start"}   ' },
    { event: undefined, data: '{"a":1}' },
    { event: 'x', data: 'line one\nline two' },
  ]
  const decoder = new SseDecoder()
  const back = decoder.push(new TextEncoder().encode(events.map(encodeEvent).join('')))
  expect(back).toEqual(events)
  expect(encodeEvent(events[0] as (typeof events)[0])).toBe('event: message_start\ndata: {"type":"message_start"}   \n\n')
})
