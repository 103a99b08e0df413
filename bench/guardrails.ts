// `bun bench/guardrails.ts`: the CPU of §19's request-path work alone — PII scanning per KB (every kind
// asked for), the streamed restore per chunk, and the response cache's key per request. Best of 10 rounds.

import { cacheKey } from '../src/cache/response-cache'
import { findEntities, PII_ENTITIES } from '../src/guardrails/entities'
import { Guard } from '../src/guardrails/guard'
import { GuardedStream } from '../src/guardrails/stream'
import type { AuthedContext, ChatInput } from '../src/pipeline/context'
import type { Plan } from '../src/pipeline/endpoint'
import type { StreamPart } from '../src/providers/adapter'
import type { ChatRequest } from '../src/providers/openai-types'

const all = new Set(PII_ENTITIES)
const support = 'Hello team, the customer wrote about their order and asked for an update on delivery. Reach them at jane.doe@example.com or +44 20 7946 0958. '
const withValues = support.repeat(Math.ceil(1024 / support.length)).slice(0, 1024)
const plain = 'The quick brown fox jumps over the lazy dog while the model explains how to configure a gateway. '.repeat(11).slice(0, 1024)

function best(n: number, fn: () => void): number {
  let min = Infinity
  for (let round = 0; round < 10; round++) {
    const t = performance.now()
    for (let i = 0; i < n; i++) fn()
    min = Math.min(min, ((performance.now() - t) / n) * 1000)
  }
  return min
}

const guard = new Guard([{ name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: [...PII_ENTITIES] }], fetch)
await guard.screenInput({ model: 'm', messages: [{ role: 'user', content: withValues }] } as ChatRequest, new AbortController().signal)
const stream = new GuardedStream(guard)
const chunk = (text: string): StreamPart[] => [{ type: 'choices', choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }]
let i = 0
const input = {
  model: { name: 'openai/gpt-4o-mini' },
  body: { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: plain.slice(0, 400) }], temperature: 0.2, max_tokens: 200 },
  outputSchema: undefined,
} as unknown as ChatInput

console.log(`PII scan, 1 KB with an email and a phone number: ${best(5000, () => findEntities(withValues, all)).toFixed(2)} µs`)
console.log(`PII scan, 1 KB of plain text: ${best(5000, () => findEntities(plain, all)).toFixed(2)} µs`)
console.log(`streamed restore, per chunk (a placeholder every 50): ${best(50_000, () => stream.transform(chunk(++i % 50 === 0 ? ' [EMAIL_1] ' : ' word'))).toFixed(3)} µs`)
console.log(`cache key, a 500-byte chat body: ${best(20_000, () => cacheKey({ endpoint: '/v1/chat/completions' } as AuthedContext, input, {} as Plan, undefined)).toFixed(2)} µs`)
