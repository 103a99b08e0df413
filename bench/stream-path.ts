// `bun bench/stream-path.ts`: the stream path alone, in process — SSE decode, the provider's translator,
// stage 6's encoder — for a 20-chunk OpenAI chat stream (its chunks passed on as bytes, as on the chat endpoints) and a 25-event Anthropic stream relayed on
// /v1/messages (docs/benchmarks.md).

import { SseDecoder } from '../src/sse/parse'
import { anthropicRelay } from '../src/apis/anthropic-messages/pass-through'
import { OpenAIStyleStream, mapOpenAIFinishReason } from '../src/providers/openai/response'
import { chatShape } from '../src/apis/chat/answer'
import type { AnswerShape } from '../src/pipeline/6-normalise'
import type { StreamTranslator } from '../src/providers/adapter'
import { MESSAGES_SHAPE } from '../src/apis/anthropic-messages/answer'
const CH = 20, words = Array.from({ length: CH }, (_, i) => `w${i} `)
const oe = (d: object, f: string | null, u?: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: u ? [] : [{ index: 0, delta: d, logprobs: null, finish_reason: f }], ...(u ? { usage: u } : {}) })}\n\n`
const openai = [oe({ role: 'assistant', content: '' }, null), ...words.map((w) => oe({ content: w }, null)), oe({}, 'stop'), oe({}, null, { prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 }), 'data: [DONE]\n\n'].join('')
const ae = (n: string, d: object) => `event: ${n}\ndata: ${JSON.stringify({ type: n, ...d })}\n\n`
const anth = [ae('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'h', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } }), ae('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }), ...words.map((w) => ae('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })), ae('content_block_stop', { index: 0 }), ae('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }), ae('message_stop', {})].join('')
const te = new TextEncoder()
const ob = te.encode(openai), ab = te.encode(anth)
const info = { requestId: 'r', model: 'm', created: 1, errorShape: 'gw' as const, estimatePromptTokens: () => 5 }
function run(bytes: Uint8Array, tr: StreamTranslator, shape: AnswerShape) {
  const d = new SseDecoder(); const enc = shape.stream(info); let n = 0
  // Chat chunks pass on as bytes (as on the chat endpoints); other translators read decoded events.
  const parts = tr.passBytes ? tr.passBytes(bytes) : d.push(bytes).flatMap((ev) => tr.push(ev))
  for (const p of parts) {
    const t = p.type === 'choices' ? enc.choices(p.choices) : p.type === 'relay' ? enc.relay(p) : ''
    if (p.type === 'bytes') n += p.bytes.length
    if (t) n += te.encode(t).length
  }
  n += te.encode(enc.end({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, 0.1, 'stop')).length
  return n
}
// Alternating rounds; the fastest round of each path is the figure (other programs' load only slows rounds down).
const N = 5000
const best = { openai: Infinity, relay: Infinity }
const time = (f: () => void) => {
  const t = performance.now()
  for (let i = 0; i < N; i++) f()
  return ((performance.now() - t) / N) * 1000
}
for (let round = 0; round < 12; round++) {
  best.openai = Math.min(best.openai, time(() => run(ob, new OpenAIStyleStream({ mapFinish: mapOpenAIFinishReason, passThrough: true }, 'openai/gpt-4o-mini'), chatShape(true))))
  best.relay = Math.min(best.relay, time(() => run(ab, anthropicRelay(), MESSAGES_SHAPE)))
}
console.log(`stream path, fastest of 12 rounds of ${N}: OpenAI chat ${best.openai.toFixed(1)} µs/answer, Anthropic relayed on /v1/messages ${best.relay.toFixed(1)} µs/answer`)
