// The schema helper itself: OpenAI-shaped values pass, broken ones are caught.

import { expect, test } from 'bun:test'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1763780000,
  model: 'openai/gpt-4o',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
}

test('a well-formed completion and chunk pass', () => {
  assertChatCompletion(completion)
  assertChatChunk({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] })
  assertChatChunk({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: completion.usage })
})

test('missing required fields are caught', () => {
  const { choices: _c, ...noChoices } = completion
  expect(() => assertChatCompletion(noChoices)).toThrow(/choices/)
  const noRefusal = { ...completion, choices: [{ ...completion.choices[0], message: { role: 'assistant', content: 'hi' } }] }
  expect(() => assertChatCompletion(noRefusal)).toThrow(/refusal/)
  expect(() => assertChatChunk({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [] })).toThrow(/object/)
})
