// The floor: a bare Bun pass-through proxy (no auth, no policy, no translation, no log). Usage: UPSTREAM=url bun bench/floor-proxy.ts
// FLOOR_READ=js: the answer's body read with a reader and written again from a ReadableStream, each chunk decoded and encoded
// (what any gateway that reads a stream does, and nothing else): the floor for reading a stream in JavaScript (bench/rss-streams.ts).

const upstream = process.env.UPSTREAM as string
const readInJs = process.env.FLOOR_READ === 'js'
const utf8 = new TextEncoder()

/** The upstream's body read and written again in JavaScript. */
function rewritten(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  const text = new TextDecoder()
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const r = await reader.read()
      if (r.done) return c.close()
      c.enqueue(utf8.encode(text.decode(r.value)))
    },
  })
}

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url)
    const res = await fetch(`${upstream}${url.pathname}`, { method: req.method, headers: req.headers, body: await req.arrayBuffer() })
    const body = readInJs && res.body ? rewritten(res.body) : res.body
    return new Response(body, { status: res.status, headers: res.headers })
  },
})
console.log(JSON.stringify({ port: server.port }))
export {}
