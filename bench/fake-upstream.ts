// Benchmark upstream: answers OpenAI and Anthropic chat requests at once (JSON or a 20-chunk stream); models with "slow" drip.
// Usage: bun bench/fake-upstream.ts  → prints {"port": N} on stdout.

import { fakeAnswer } from './fake-answers'

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: '127.0.0.1',
  idleTimeout: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    const body = (await req.json()) as { model: string; stream?: boolean }
    return fakeAnswer(path, body) ?? new Response('{"error":"not found"}', { status: 404 })
  },
})
console.log(JSON.stringify({ port: server.port }))
export {}
