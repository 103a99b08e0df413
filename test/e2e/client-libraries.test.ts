// The clients people use, unchanged but for base URL and key: the Vercel AI SDK's default `openai(model)`
// provider (it speaks the Responses API), `@ai-sdk/anthropic` (Messages) and LangChain's ChatOpenAI with
// the Responses API on — generate, stream, tools and structured output through gw, to every provider.

import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { ChatOpenAI } from '@langchain/openai'
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai'
import { expect, test } from 'bun:test'
import { z } from 'zod'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
const { fakes } = useAllProviders((s) => {
  gw = s.gw
})

const MODELS = [
  ['openai', 'openai/gpt-4o-mini'],
  ['anthropic', 'anthropic/claude-sonnet-4-6'],
  ['google', 'google/gemini-2.5-flash'],
  ['mistral', 'mistral/mistral-small-latest'],
] as const

const hello = (provider: string, model: string) => `Hello from fake-${provider} (${model.split('/')[1]}).`
const weather = (calls: string[]) =>
  tool({
    description: 'Weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      calls.push(city)
      return { city, celsius: 14 }
    },
  })

for (const [provider, model] of MODELS) {
  test(`Vercel AI SDK openai(): generate, stream, a tool round and an object from ${provider}`, async () => {
    const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key })
    const gen = await generateText({ model: openai(model), prompt: 'Say hi please' })
    expect(gen.text).toBe(hello(provider, model))
    expect(gen.usage.outputTokens).toBe(4)
    expect(fakes[provider].requests).toHaveLength(1)
    if (provider === 'openai') expect(fakes.openai.requests[0]?.path).toBe('/v1/responses')

    const streamed = streamText({ model: openai(model), prompt: 'Say hi please' })
    let text = ''
    for await (const t of streamed.textStream) text += t
    expect(text).toBe(hello(provider, model))

    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'weather', arguments: { city: 'Paris' } }], finish: 'tool_calls' })
    const calls: string[] = []
    const round = await generateText({ model: openai(model), prompt: 'Weather in Paris?', tools: { weather: weather(calls) }, stopWhen: stepCountIs(2) })
    expect(calls).toEqual(['Paris'])
    expect(round.steps).toHaveLength(2)
    expect(round.text).toBe(hello(provider, model))

    const { object } = await generateObject({ model: openai(model), schema: z.object({ city: z.string() }), prompt: 'A city' })
    expect(object).toEqual({ city: 'x' })
  })

  test(`@ai-sdk/anthropic: generate, stream, a tool round and an object from ${provider}`, async () => {
    const anthropic = createAnthropic({ baseURL: `${gw.url}/v1`, apiKey: gw.key })
    const gen = await generateText({ model: anthropic(model), prompt: 'Say hi please', maxOutputTokens: 200 })
    expect(gen.text).toBe(hello(provider, model))
    if (provider === 'anthropic') expect(fakes.anthropic.requests[0]?.path).toBe('/v1/messages')

    const streamed = streamText({ model: anthropic(model), prompt: 'Say hi please', maxOutputTokens: 200 })
    let text = ''
    for await (const t of streamed.textStream) text += t
    expect(text).toBe(hello(provider, model))

    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }], finish: 'tool_calls' })
    const calls: string[] = []
    const round = await generateText({
      model: anthropic(model),
      prompt: 'Weather in Oslo?',
      maxOutputTokens: 200,
      tools: { weather: weather(calls) },
      stopWhen: stepCountIs(2),
    })
    expect(calls).toEqual(['Oslo'])
    expect(round.text).toBe(hello(provider, model))

    const { object } = await generateObject({ model: anthropic(model), schema: z.object({ city: z.string() }), prompt: 'A city', maxOutputTokens: 200 })
    expect(object).toEqual({ city: 'x' })
  })

  test(`LangChain ChatOpenAI with the Responses API: invoke, stream, tools and structured output from ${provider}`, async () => {
    const llm = new ChatOpenAI({ model, apiKey: gw.key, configuration: { baseURL: `${gw.url}/v1` }, useResponsesApi: true, maxRetries: 0 })
    const msg = await llm.invoke('Say hi please')
    expect(msg.text).toBe(hello(provider, model))
    if (provider === 'openai') expect(fakes.openai.requests[0]?.path).toBe('/v1/responses')

    let text = ''
    for await (const chunk of await llm.stream('Say hi please')) text += chunk.text
    expect(text).toBe(hello(provider, model))

    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'weather', arguments: { city: 'Rome' } }], finish: 'tool_calls' })
    const withTools = llm.bindTools([{ type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }])
    const called = await withTools.invoke('Weather in Rome?')
    expect(called.tool_calls?.[0]).toMatchObject({ name: 'weather', args: { city: 'Rome' } })

    const structured = llm.withStructuredOutput(z.object({ city: z.string() }))
    expect(await structured.invoke('A city')).toEqual({ city: 'x' })
  })
}

test('LangChain ChatOpenAI with a wrong gw key shows gw’s message, not "401 true" (x-stainless-lang: OpenAI’s error shape)', async () => {
  const llm = new ChatOpenAI({
    model: 'openai/gpt-4o-mini',
    apiKey: 'gw_sk_nope0000000000000000000000000000000000000000',
    configuration: { baseURL: `${gw.url}/v1` },
    maxRetries: 0,
  })
  const err = (await llm.invoke('Say hi please').catch((e: unknown) => e)) as Error
  expect(err).toBeInstanceOf(Error)
  expect(err.message).toContain('Invalid service key')
  expect(err.message).not.toContain('401 true')
})
