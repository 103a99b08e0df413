// The floor: a bare Bun pass-through proxy (no auth, no policy, no translation, no log). Usage: UPSTREAM=url bun bench/floor-proxy.ts

const upstream = process.env.UPSTREAM as string
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url)
    const res = await fetch(`${upstream}${url.pathname}`, { method: req.method, headers: req.headers, body: await req.arrayBuffer() })
    return new Response(res.body, { status: res.status, headers: res.headers })
  },
})
console.log(JSON.stringify({ port: server.port }))
export {}
