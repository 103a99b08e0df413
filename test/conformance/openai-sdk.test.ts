// The official `openai` SDK as the client, pointed at gw, for every provider: plain answers, streams,
// its stream helper, a full tool round trip with runTools (streamed and not), and parse() for JSON.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import type { FakeUpstream } from '../fakes/upstream'
import type { TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'
import { greetingOf, modelOf, type ProviderSpec, SPECS, startMatrix, WEATHER_PARAMS } from './specs'

let fakes: Record<string, FakeUpstream>
let gw: TestGateway
let stop: () => Promise<void>
let client: OpenAI

beforeAll(async () => {
  ;({ gw, fakes, stop } = await startMatrix())
  // The SDK sends `Authorization: Bearer <key>`, which gw takes as a service key.
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
})
afterAll(() => stop())

const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'developer', content: 'Be brief' },
  { role: 'user', content: 'Say hi please' },
]

describe.each(SPECS.map((s) => [s.name, s] as const))('%s', (_name, spec: ProviderSpec) => {
  const model = modelOf(spec)
  const greeting = greetingOf(spec)
  const fake = () => fakes[spec.name] as FakeUpstream
  beforeEach(() => fake().reset())

  test('create() parses a plain answer', async () => {
    const c = await client.chat.completions.create({ model, messages })
    assertChatCompletion(c)
    expect(c.object).toBe('chat.completion')
    expect(c.choices[0]?.message.content).toBe(greeting)
    expect(c.usage?.total_tokens).toBeGreaterThan(0)
  })

  test('create({stream: true}) yields chunks ending with usage', async () => {
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of await client.chat.completions.create({ model, messages, stream: true })) chunks.push(chunk)
    for (const c of chunks) assertChatChunk(c)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(greeting)
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0)
  })

  test('the stream helper assembles streamed tool calls', async () => {
    const runner = client.chat.completions.stream({
      model,
      messages,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_PARAMS } }],
      tool_choice: 'required',
    })
    const final = await runner.finalChatCompletion()
    expect(final.choices[0]?.finish_reason).toBe('tool_calls')
    const call = final.choices[0]?.message.tool_calls?.[0]
    expect(call?.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'x' })
  })

  for (const stream of [false, true]) {
    test(`runTools round trip (${stream ? 'streamed' : 'not streamed'}): call, result, answer`, async () => {
      fake().enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] })
      const seen: unknown[] = []
      const tools = [
        {
          type: 'function' as const,
          function: {
            name: 'get_weather',
            description: 'Current weather in a city',
            parameters: WEATHER_PARAMS,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              seen.push(args)
              return { city: args.city, temp_c: 14 }
            },
          },
        },
      ]
      const runner = stream
        ? client.chat.completions.runTools({ model, messages, tools, stream: true })
        : client.chat.completions.runTools({ model, messages, tools })
      expect(await runner.finalContent()).toBe(greeting)
      expect(seen).toEqual([{ city: 'Paris' }])
      expect(fake().requests).toHaveLength(2)
    })
  }

  test('parse() reads a json_schema answer', async () => {
    const c = await client.chat.completions.parse({
      model,
      messages,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'weather',
          schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
          strict: true,
        },
      },
    })
    expect(c.choices[0]?.message.parsed).toEqual({ city: 'x' })
  })
})
