// Prompt token counting is bounded in work: long runs, huge prompts and special tokens never hold the event loop for long.

import { expect, test } from 'bun:test'
import { countPromptTokens, promptTokensAtMost, warmTokenizer } from '../../src/policy/prompt-tokens'
import type { ChatRequest } from '../../src/providers/openai-types'

const ask = (content: string): ChatRequest => ({ model: 'gpt-4o', messages: [{ role: 'user', content }] })

/** The longest the event loop went without running a 1 ms interval while `work` ran. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now()
  let longest = 0
  const timer = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  try {
    await work()
  } finally {
    clearInterval(timer)
  }
  return longest
}

test('a 1 MB unbroken word is counted without holding the event loop (generous bound: 250 ms)', async () => {
  await warmTokenizer()
  let n = 0
  const stall = await longestStall(async () => {
    n = await countPromptTokens(ask('a'.repeat(1_000_000)))
  })
  expect(n).toBeGreaterThan(100_000)
  expect(stall).toBeLessThan(250)
})

test('counting stops past the limit, and when the client leaves', async () => {
  const text = 'word '.repeat(400_000)
  const started = performance.now()
  const n = await countPromptTokens(ask(text), { stopAbove: 100 })
  expect(n).toBeGreaterThan(100)
  expect(n).toBeLessThan(10_000)
  expect(performance.now() - started).toBeLessThan(1_000)
  const ac = new AbortController()
  ac.abort()
  await expect(countPromptTokens(ask(text), { signal: ac.signal })).rejects.toThrow()
})

test('special tokens are plain text, and tools, tool arguments and unknown fields are counted', async () => {
  const plain = await countPromptTokens(ask('say <|endoftext|> please'))
  expect(plain).toBeGreaterThan(10)
  const base = await countPromptTokens(ask('hi'))
  const withTool = await countPromptTokens({
    ...ask('hi'),
    tools: [{ type: 'function', function: { name: 'f', description: 'many words '.repeat(50) } }],
  })
  expect(withTool - base).toBeGreaterThan(100)
  const withUnknown = await countPromptTokens({ ...ask('hi'), prediction: { type: 'content', content: 'x '.repeat(100) } } as ChatRequest)
  expect(withUnknown - base).toBeGreaterThan(90)
})

test('promptTokensAtMost is never below the count (a token is at least one byte), so a prompt within it need not be counted', async () => {
  const requests: ChatRequest[] = [
    ask('x'.repeat(400)),
    ask('héllo wörld ✓ 日本語 '.repeat(50)),
    ask(Array.from({ length: 2_000 }, (_, i) => String.fromCharCode(33 + ((i * 7919) % 90))).join('')),
    { ...ask('hi'), tools: [{ type: 'function', function: { name: 'f', description: 'many words '.repeat(50) } }] },
    { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'x' } }] }] },
  ]
  for (const r of requests) {
    const counted = await countPromptTokens(r, { extra: { type: 'object' } })
    const bound = promptTokensAtMost(r, { type: 'object' })
    expect(bound).toBeGreaterThanOrEqual(counted)
  }
  // Bytes, not characters: a 3-byte character is up to 3 tokens.
  expect(promptTokensAtMost(ask('✓'))).toBe(promptTokensAtMost(ask('x')) + 2)
})

test('a message name that is not a string counts as its JSON text, never as a number of tokens', () => {
  // The request type comes from the schema, which leaves `name` unchecked: a client may send any value.
  const named = (name: unknown): ChatRequest => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi', name }] })
  expect(promptTokensAtMost(named(1_000_000))).toBe(promptTokensAtMost(named('1000000')))
  expect(promptTokensAtMost(named({ a: 1 }))).toBe(promptTokensAtMost(named('{"a":1}')))
})
