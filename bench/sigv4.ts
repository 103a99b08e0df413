// `bun bench/sigv4.ts`: AWS SigV4 signing alone (src/providers/bedrock/sigv4.ts), µs per Bedrock Converse request.

import { signSigV4 } from '../src/providers/bedrock/sigv4'

const url = `https://bedrock-runtime.us-east-1.amazonaws.com/model/${encodeURIComponent('anthropic.claude-3-5-sonnet-20240620-v1:0')}/converse`
// A typical chat body (~1 KiB): the body's SHA-256 is part of every signature.
const body = new TextEncoder().encode(JSON.stringify({
  system: [{ text: 'You are a helpful assistant. Answer briefly.' }],
  messages: Array.from({ length: 6 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: [{ text: `Turn ${i}: ${'lorem ipsum dolor sit amet '.repeat(5)}` }] })),
  inferenceConfig: { maxTokens: 512, temperature: 0.7 },
}))
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'session-token-example' }
const start = Date.UTC(2026, 10, 27, 3, 0, 0)
const N = 20000
let best = Infinity
let sink = 0
for (let round = 0; round < 10; round++) {
  const t = performance.now()
  for (let i = 0; i < N; i++) {
    const h = signSigV4({ method: 'POST', url, headers: { 'content-type': 'application/json', accept: 'application/json' }, body }, { region: 'us-east-1', service: 'bedrock', credentials, now: start + i * 1000 })
    sink += h.authorization.length
  }
  best = Math.min(best, ((performance.now() - t) / N) * 1000)
}
console.log(`sigv4: ${best.toFixed(2)} µs per signature (fastest of 10 rounds of ${N}, ${body.length}-byte body, cached signing key) [${sink > 0 ? 'ok' : ''}]`)
