// `bun bench/event-stream.ts`: Bedrock event-stream decoding alone (src/providers/bedrock/event-stream.ts), µs per frame.

import { EventStreamDecoder } from '../src/providers/bedrock/event-stream'
import { eventFrame } from '../test/fakes/event-stream-encode'

// A 200-frame ConverseStream answer: text deltas of a few words, as Bedrock sends them (with `p` padding).
const frames = [
  eventFrame('messageStart', { role: 'assistant' }, 20),
  ...Array.from({ length: 197 }, (_, i) => eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: ` word${i} and more` } }, i % 50)),
  eventFrame('messageStop', { stopReason: 'end_turn' }, 10),
  eventFrame('metadata', { usage: { inputTokens: 25, outputTokens: 400, totalTokens: 425 }, metrics: { latencyMs: 900 } }, 30),
]
const whole = new Uint8Array(Buffer.concat(frames))
// The same bytes in 61-byte network chunks, so most frames straddle two or three chunks.
const pieces: Uint8Array[] = []
for (let at = 0; at < whole.length; at += 61) pieces.push(whole.slice(at, at + 61))

function run(chunks: Uint8Array[]): number {
  const d = new EventStreamDecoder()
  let n = 0
  for (const c of chunks) n += d.push(c).length
  return n + d.end().length
}
const N = 2000
const best = { perFrame: Infinity, split: Infinity }
for (let round = 0; round < 10; round++) {
  for (const [key, chunks] of [['perFrame', frames], ['split', pieces]] as const) {
    const t = performance.now()
    let got = 0
    for (let i = 0; i < N; i++) got += run(chunks)
    if (got !== N * frames.length) throw new Error(`decoded ${got} frames, expected ${N * frames.length}`)
    best[key] = Math.min(best[key], ((performance.now() - t) / (N * frames.length)) * 1000)
  }
}
console.log(`event-stream: ${best.perFrame.toFixed(2)} µs per frame (one chunk per frame), ${best.split.toFixed(2)} µs per frame (61-byte chunks); ${frames.length} frames, ${whole.length} bytes, fastest of 10 rounds of ${N}`)
