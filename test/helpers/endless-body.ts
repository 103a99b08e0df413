// A server whose answer never ends (1 MB more each time it is read), for the tests of gw's read limits.

/** An upstream that sends `head`, then 1 MB more each time gw reads, up to 400 MB, without a length; `sent()` says how many MB went. */
export function endlessBody(head: string, init: ResponseInit) {
  let sent = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode(head))
          },
          pull(c) {
            if (sent >= 400) return c.close()
            sent++
            c.enqueue(new Uint8Array(1024 * 1024).fill(120))
          },
        }),
        init,
      ),
  })
  return { port: server.port, sent: () => sent, stop: () => server.stop(true) }
}
