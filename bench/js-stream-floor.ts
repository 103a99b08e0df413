// A floor for streams read and written in JavaScript: a bare Bun proxy that reads the upstream's body with a reader and answers
// with a ReadableStream it pulls from it, each chunk decoded and encoded again (what any gateway that reads a stream does, and
// nothing else). Beside bench/floor-proxy.ts (the body passed on natively) it shows what reading a stream in JavaScript costs
// in memory (bench/rss-streams.ts --floor --floor-script js-stream-floor.ts). Usage: UPSTREAM=url bun bench/js-stream-floor.ts

const upstream = process.env.UPSTREAM as string
const utf8 = new TextEncoder()
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url)
    const res = await fetch(`${upstream}${url.pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await req.text() })
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const text = new TextDecoder()
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        const r = await reader.read()
        if (r.done) return c.close()
        c.enqueue(utf8.encode(text.decode(r.value)))
      },
    })
    return new Response(body, { status: res.status, headers: { 'content-type': 'text/event-stream' } })
  },
})
console.log(JSON.stringify({ port: server.port }))
export {}
