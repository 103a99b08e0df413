// `thinking` on /v1/messages for the providers it is translated to, through the official Anthropic SDK:
// each target's reasoning control as it reached the fake, and the thinking text the provider gave back
// as `thinking` blocks, streamed and not (docs/apis.md, "Thinking on other providers").

import Anthropic from '@anthropic-ai/sdk'
import { expect, test } from 'bun:test'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
let client: Anthropic
const { fakes } = useAllProviders((s) => {
  gw = s.gw
  client = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
})

const messages = [{ role: 'user' as const, content: 'Say hi please' }]
const THOUGHT = 'Let me think about this request.'
const sent = (p: keyof typeof fakes, i = 0) => fakes[p].requests[i]?.body as Record<string, any>
const enabled = (budget_tokens: number) => ({ type: 'enabled' as const, budget_tokens })

/** A request the SDK's types may not know every field of (output_config.effort, thinking.display). */
const params = (p: Record<string, unknown>) => p as unknown as Anthropic.MessageCreateParamsNonStreaming

/** The answer, non-streamed and streamed (with the text of the SDK's `thinking` events). */
async function both(p: Record<string, unknown>) {
  const msg = await client.messages.create(params(p))
  let thought = ''
  const stream = client.messages.stream(params(p)).on('thinking', (delta) => {
    thought += delta
  })
  return { msg, streamed: await stream.finalMessage(), thought }
}

test.each([
  [2048, 'low'],
  [10_000, 'medium'],
  [20_000, 'high'],
])('OpenAI reasoning model: budget_tokens %d → reasoning_effort %s, streamed and not', async (budget, effort) => {
  const { msg, streamed } = await both({ model: 'openai/o4-mini', max_tokens: budget + 1000, thinking: enabled(budget), messages })
  expect(sent('openai', 0).reasoning_effort).toBe(effort)
  expect(sent('openai', 1).reasoning_effort).toBe(effort)
  // OpenAI's chat completions give no reasoning text: the answer has no thinking block.
  expect(msg.content.map((b) => b.type)).toEqual(['text'])
  expect(streamed.content.map((b) => b.type)).toEqual(['text'])
})

test('OpenAI: output_config.effort is sent as it is; a model without reasoning, or an unknown effort, sends none', async () => {
  const res = await client.messages.create(params({ model: 'openai/o4-mini', max_tokens: 500, output_config: { effort: 'high' }, messages }))
  expect(res.content[0]).toMatchObject({ type: 'text' })
  expect(sent('openai').reasoning_effort).toBe('high')
  await client.messages.create(params({ model: 'openai/gpt-4o-mini', max_tokens: 3000, thinking: enabled(2048), messages }))
  expect(sent('openai', 1)).not.toHaveProperty('reasoning_effort')
  // Not one of Anthropic's efforts: not sent on (Anthropic itself would refuse it).
  await client.messages.create(params({ model: 'openai/o4-mini', max_tokens: 500, output_config: { effort: 'extreme' }, messages }))
  expect(sent('openai', 2)).not.toHaveProperty('reasoning_effort')
})

test('Gemini 2.5: the exact budget with includeThoughts; the thoughts come back as a thinking block first', async () => {
  const { msg, streamed, thought } = await both({ model: 'google/gemini-2.5-flash', max_tokens: 8000, thinking: enabled(5000), messages })
  for (const i of [0, 1]) expect(sent('google', i).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 5000, includeThoughts: true })
  const text = 'Hello from fake-google (gemini-2.5-flash).'
  expect(msg.content as unknown[]).toEqual([
    { type: 'thinking', thinking: THOUGHT, signature: '' },
    { type: 'text', text },
  ])
  expect(streamed.content).toMatchObject([
    { type: 'thinking', thinking: THOUGHT, signature: '' },
    { type: 'text', text },
  ])
  expect(thought).toBe(THOUGHT)
  expect(streamed.stop_reason).toBe('end_turn')
})

test('Gemini 3+: a thinking level by budget band; display "omitted" asks for no thoughts', async () => {
  const res = await client.messages.create(params({ model: 'google/gemini-3.5-flash', max_tokens: 20_000, thinking: enabled(10_000), messages }))
  expect(sent('google').generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'MEDIUM', includeThoughts: true })
  expect(res.content.map((b) => b.type)).toEqual(['thinking', 'text'])

  const omitted = await client.messages.create(
    params({ model: 'google/gemini-2.5-flash', max_tokens: 8000, thinking: { ...enabled(2048), display: 'omitted' }, messages }),
  )
  expect(sent('google', 1).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 2048 })
  expect(omitted.content.map((b) => b.type)).toEqual(['text'])
})

test('Mistral: reasoning_effort by budget band; a reasoning model’s thinking chunks come back as a thinking block', async () => {
  const { msg, streamed, thought } = await both({ model: 'mistral/magistral-small-latest', max_tokens: 3000, thinking: enabled(2048), messages })
  expect(sent('mistral', 0).reasoning_effort).toBe('low')
  expect(sent('mistral', 1).reasoning_effort).toBe('low')
  const text = 'Hello from fake-mistral (magistral-small-latest).'
  expect(msg.content as unknown[]).toEqual([
    { type: 'thinking', thinking: THOUGHT, signature: '' },
    { type: 'text', text },
  ])
  expect(streamed.content).toMatchObject([
    { type: 'thinking', thinking: THOUGHT },
    { type: 'text', text },
  ])
  expect(thought).toBe(THOUGHT)
})

test('without thinking nothing changes: no reasoning control sent, thinking text dropped (Messages and chat completions)', async () => {
  const msg = await client.messages.create({ model: 'mistral/magistral-small-latest', max_tokens: 300, messages })
  expect(sent('mistral')).not.toHaveProperty('reasoning_effort')
  expect(msg.content.map((b) => b.type)).toEqual(['text'])
  await client.messages.create({ model: 'google/gemini-2.5-flash', max_tokens: 300, messages })
  expect(sent('google').generationConfig).not.toHaveProperty('thinkingConfig')

  const chat = (await (await gw.chat({ model: 'mistral/magistral-small-latest', messages })).json()) as Record<string, any>
  expect(chat.choices[0].message).toEqual({ role: 'assistant', content: 'Hello from fake-mistral (magistral-small-latest).', refusal: null })
})
