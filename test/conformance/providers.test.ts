// One conformance suite, run for every provider: what the client gets, what reached the fake
// upstream (whole bodies, from ./specs.ts), and what the log entry records.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { FakeUpstream } from '../fakes/upstream'
import { readSse, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'
import {
  type Call,
  greetingOf,
  HELLO,
  modelOf,
  MULTI_TURN,
  OUTPUT_SCHEMA,
  type ProviderSpec,
  SPECS,
  startMatrix,
  SYSTEM_CHAT,
  TOOLS,
  toolResultChat,
} from './specs'

let fakes: Record<string, FakeUpstream>
let gw: TestGateway
let stop: () => Promise<void>

beforeAll(async () => {
  ;({ gw, fakes, stop } = await startMatrix())
})
afterAll(() => stop())

/** The client's view of a streamed answer, put back together. */
interface Streamed {
  content: string
  refusal: string
  toolCalls: Call[]
  finishes: string[]
  usage: Record<string, any> | undefined
  /** The error event that ends a failed stream. */
  error: Record<string, any> | undefined
  ids: Set<string>
  done: boolean
}

async function streamed(res: Response): Promise<Streamed> {
  const events = await readSse(res)
  const out: Streamed = { content: '', refusal: '', toolCalls: [], finishes: [], usage: undefined, error: undefined, ids: new Set(), done: false }
  for (const e of events) {
    if (e === '[DONE]') {
      out.done = true
      continue
    }
    const ev = e as Record<string, any>
    if (ev.error === true) {
      out.error = ev
      continue
    }
    assertChatChunk(ev)
    out.ids.add(ev.id)
    if (ev.usage) out.usage = ev.usage
    for (const c of ev.choices) {
      out.content += c.delta.content ?? ''
      out.refusal += c.delta.refusal ?? ''
      if (c.finish_reason) out.finishes.push(c.finish_reason)
      for (const tc of c.delta.tool_calls ?? []) {
        const slot = (out.toolCalls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } })
        if (tc.id) slot.id = tc.id
        if (tc.function?.name) slot.function.name += tc.function.name
        if (tc.function?.arguments) slot.function.arguments += tc.function.arguments
      }
    }
  }
  expect(events.at(-1)).toBe('[DONE]')
  return out
}

describe.each(SPECS.map((s) => [s.name, s] as const))('%s', (_name, spec: ProviderSpec) => {
  const fake = () => fakes[spec.name] as FakeUpstream
  const model = modelOf(spec)
  const greeting = greetingOf(spec)
  const sent = (i = 0) => fake().requests[i]
  const requestId = (res: Response) => res.headers.get('x-gw-request-id') as string

  async function complete(body: Record<string, unknown>) {
    const res = await gw.chat({ model, ...body })
    const json = (await res.json()) as Record<string, any>
    if (res.status === 200) assertChatCompletion(json)
    return { res, json, choice: json.choices?.[0], log: () => gw.log(requestId(res)) }
  }
  async function stream(body: Record<string, unknown>) {
    const res = await gw.chat({ model, ...body, stream: true })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    return { res, s: await streamed(res), log: () => gw.log(requestId(res)) }
  }

  beforeEach(() => fake().reset())

  test('text: answer, usage, and the request the upstream got', async () => {
    const { res, json, choice, log } = await complete({ messages: HELLO })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-model')).toBe(model)
    expect(json.model).toBe(model)
    expect(choice).toMatchObject({ index: 0, message: { role: 'assistant', content: greeting, refusal: null }, finish_reason: 'stop' })
    expect(json.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
    expect(sent()?.path).toBe(spec.path(false))
    expect(sent()?.headers).toMatchObject(spec.auth(fake()))
    for (const h of spec.notSent ?? []) expect(sent()?.headers[h]).toBeUndefined()
    expect(sent()?.body).toEqual(spec.sent.text())
    expect(await log()).toMatchObject({ status: 200, model, provider: spec.prefix, refusal: false, usage: { promptTokens: 6, completionTokens: 4, estimated: false } })
  })

  test('system and developer messages', async () => {
    const { res } = await complete({ messages: SYSTEM_CHAT })
    expect(res.status).toBe(200)
    expect(sent()?.body).toEqual(spec.sent.system())
  })

  test('a conversation of system messages only is answered (sent as a user turn where the API needs one)', async () => {
    const { res, choice } = await complete({ messages: [{ role: 'system', content: 'Greet the reader.' }, { role: 'developer', content: 'Be brief.' }] })
    expect(res.status).toBe(200)
    expect(choice.message.content).toBe(greeting)
    expect(JSON.stringify(sent()?.body)).toContain('Greet the reader.')
  })

  test('multi-turn conversation, consecutive user turns', async () => {
    const { res, choice } = await complete({ messages: MULTI_TURN })
    expect(res.status).toBe(200)
    expect(choice.message.content).toBe(greeting)
    expect(sent()?.body).toEqual(spec.sent.multiTurn())
  })

  test('stream: role first, content, one finish, usage chunk, [DONE]', async () => {
    const { s, log } = await stream({ messages: HELLO })
    expect(s.content).toBe(greeting)
    expect(s.finishes).toEqual(['stop'])
    expect(s.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
    expect(s.ids.size).toBe(1)
    expect(sent()?.path).toBe(spec.path(true))
    expect(sent()?.body).toEqual(spec.sent.stream())
    expect(await log()).toMatchObject({ stream: true, status: 200, incomplete: false, usage: { promptTokens: 6, estimated: false } })
  })

  test('tool call', async () => {
    const { res, choice } = await complete({ messages: HELLO, tools: TOOLS, tool_choice: 'required' })
    expect(res.status).toBe(200)
    expect(choice.finish_reason).toBe('tool_calls')
    expect(choice.message.content).toBeNull()
    expect(choice.message.tool_calls).toEqual([
      { id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"x"}' } },
    ])
    expect(sent()?.body).toEqual(spec.sent.tools())
  })

  test('tool call, streamed as tool_calls fragments', async () => {
    const { s } = await stream({ messages: HELLO, tools: TOOLS, tool_choice: 'required' })
    expect(s.finishes).toEqual(['tool_calls'])
    expect(s.toolCalls).toEqual([{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: expect.any(String) } }])
    expect(JSON.parse(s.toolCalls[0]?.function.arguments ?? '')).toEqual({ city: 'x' })
    expect(s.toolCalls[0]?.id).not.toBe('')
  })

  test('tool result turn: the call goes back with its id and the result answers it', async () => {
    const first = await complete({ messages: HELLO, tools: TOOLS, tool_choice: 'required' })
    const call = first.choice.message.tool_calls[0] as Call
    fake().reset()
    const { res, choice } = await complete({ messages: toolResultChat(call), tools: TOOLS })
    expect(res.status).toBe(200)
    expect(choice.message.content).toBe(greeting)
    expect(sent()?.body).toEqual(spec.sent.toolResult(call))
  })

  test('parallel tool calls, stable indexes when streamed', async () => {
    const calls = [
      { name: 'get_weather', arguments: { city: 'Paris' } },
      { name: 'get_weather', arguments: { city: 'Rome' } },
    ]
    fake().enqueue({ kind: 'reply', toolCalls: calls }, { kind: 'reply', toolCalls: calls })
    const { choice } = await complete({ messages: HELLO, tools: TOOLS })
    expect(choice.finish_reason).toBe('tool_calls')
    const ids = choice.message.tool_calls.map((tc: Call) => tc.id)
    expect(new Set(ids).size).toBe(2)
    expect(choice.message.tool_calls.map((tc: Call) => JSON.parse(tc.function.arguments))).toEqual([{ city: 'Paris' }, { city: 'Rome' }])

    const { s } = await stream({ messages: HELLO, tools: TOOLS })
    expect(s.finishes).toEqual(['tool_calls'])
    expect(s.toolCalls.map((tc) => JSON.parse(tc.function.arguments))).toEqual([{ city: 'Paris' }, { city: 'Rome' }])
    expect(new Set(s.toolCalls.map((tc) => tc.id)).size).toBe(2)
  })

  test('parallel_tool_calls: false', async () => {
    const { res } = await complete({ messages: HELLO, tools: TOOLS, tool_choice: 'auto', parallel_tool_calls: false })
    expect(res.status).toBe(200)
    expect(sent()?.body).toEqual(spec.sent.parallelOff())
  })

  test('JSON object mode: JSON text in content, finish stop, streamed or not', async () => {
    const { choice, log } = await complete({ messages: HELLO, output_schema: { mode: 'json_object' } })
    expect(choice.finish_reason).toBe('stop')
    expect(typeof JSON.parse(choice.message.content)).toBe('object')
    expect(choice.message.tool_calls).toBeUndefined()
    expect(sent()?.body).toEqual(spec.sent.jsonObject())
    expect((await log()).structuredOutput).toEqual({ parsed: true, matchesSchema: null })

    const streamedAnswer = await stream({ messages: HELLO, 'x-gw-output-schema': { mode: 'json_object' } })
    expect(streamedAnswer.s.finishes).toEqual(['stop'])
    expect(streamedAnswer.s.toolCalls).toEqual([])
    expect(typeof JSON.parse(streamedAnswer.s.content)).toBe('object')
    expect((await streamedAnswer.log()).structuredOutput).toEqual({ parsed: true, matchesSchema: null })
  })

  test('JSON schema mode: content matches the schema, streamed or not', async () => {
    const { choice, log } = await complete({ messages: HELLO, output_schema: OUTPUT_SCHEMA })
    expect(choice.finish_reason).toBe('stop')
    expect(JSON.parse(choice.message.content)).toEqual({ city: 'x', temp_c: 1 })
    expect(sent()?.body).toEqual(spec.sent.jsonSchema())
    expect((await log()).structuredOutput).toEqual({ parsed: true, matchesSchema: true })

    const streamedAnswer = await stream({ messages: HELLO, output_schema: OUTPUT_SCHEMA })
    expect(streamedAnswer.s.finishes).toEqual(['stop'])
    expect(JSON.parse(streamedAnswer.s.content)).toEqual({ city: 'x', temp_c: 1 })
    expect((await streamedAnswer.log()).structuredOutput).toEqual({ parsed: true, matchesSchema: true })
  })

  test('a length cut ends with finish_reason length', async () => {
    const { choice } = await complete({ messages: HELLO, max_tokens: 2 })
    expect(choice.finish_reason).toBe('length')
    expect(choice.message.content).toBe('Hello from')
    expect(sent()?.body).toEqual(spec.sent.length())
  })

  test('refusal / safety stop', async () => {
    fake().enqueue({ kind: 'reply', finish: 'refusal' }, { kind: 'reply', finish: 'refusal' })
    const { res, choice, log } = await complete({ messages: HELLO })
    expect(res.status).toBe(200)
    expect(choice.finish_reason).toBe(spec.refusal.finish)
    const refusalText = spec.refusal.text ?? spec.refusal.logged
    if (refusalText) expect(choice.message.refusal).toEqual(expect.any(String))
    expect((await log()).refusal).toBe(spec.refusal.logged)

    const s = await stream({ messages: HELLO })
    expect(s.s.finishes).toEqual([spec.refusal.finish])
    if (refusalText) expect(s.s.refusal).not.toBe('')
    expect((await s.log()).refusal).toBe(spec.refusal.logged)
  })

  test.each(spec.errorStatuses)('upstream HTTP %d becomes a 502 provider_error', async (status) => {
    // Its own model id: a 429's retry-after would otherwise hold back the tests that follow.
    const m = `${model}-e${status}`
    fake().enqueue({ kind: 'error', status, retryAfter: '7' })
    const res = await gw.chat({ model: m, messages: HELLO })
    expect(res.status).toBe(502)
    const body = (await res.json()) as Record<string, string>
    expect(body).toMatchObject({ error: true, code: 'provider_error' })
    expect(body.message).toContain(`${m} → HTTP ${status}`)
    expect(body.message).not.toContain(fake().apiKey)
    if (status === 429) expect(res.headers.get('retry-after')).toBe('7')
    const log = await gw.log(requestId(res))
    // Whose failure it is (PRODUCT §4a): the key's (401, 403, 429), the request's (400, 404, …), else the provider's.
    const failureClass = [401, 403, 429].includes(status) ? 'key' : status < 500 ? 'request' : 'provider'
    expect(log.attempts).toEqual([
      {
        model: m,
        key: 'default',
        outcome: status === 429 ? 'rate_limit' : 'provider_error',
        class: failureClass,
        status,
        latencyMs: expect.any(Number),
        message: expect.any(String),
      },
    ])
  })

  test('a context-length error is a context_limit failure', async () => {
    fake().enqueue({ kind: 'error', status: 400, errorType: 'context_length' })
    const res = await gw.chat({ model, messages: HELLO })
    expect(res.status).toBe(502)
    const log = await gw.log(requestId(res))
    expect((log.attempts as Record<string, unknown>[])[0]).toMatchObject({ outcome: 'context_limit', status: 400 })
  })

  const failsMidStream = async (why: RegExp) => {
    const { s, log } = await stream({ messages: HELLO })
    expect(s.content.length).toBeGreaterThan(0)
    expect(s.content).not.toBe(greeting)
    expect(s.error).toMatchObject({ error: true, code: 'provider_error', message: expect.stringMatching(why) })
    expect(s.done).toBe(true)
    expect(await log()).toMatchObject({ status: 200, errorCode: 'provider_error', incomplete: true })
  }

  test('a malformed chunk mid-stream ends the stream with an error event', async () => {
    fake().enqueue({ kind: 'malformed-after', events: spec.eventsIntoContent })
    await failsMidStream(/malformed stream event/)
  })

  test('an error event mid-stream ends the stream with an error event', async () => {
    fake().enqueue({ kind: 'error-event-after', events: spec.eventsIntoContent })
    await failsMidStream(/error event in stream/)
  })

  test('a stream cut without its end is reported, not ended cleanly', async () => {
    fake().enqueue({ kind: 'cut-after', events: spec.eventsIntoContent })
    await failsMidStream(/ended before it was complete/)
  })
})
