// Golden streams: every recorded provider stream in the fixtures (/work/shared/fixtures/providers/recordings), whole and cut short, replayed by an upstream that sends its bytes in uneven pieces, through gw over real sockets (Anthropic → /v1/messages, OpenAI Responses → /v1/responses, OpenAI → chat completions); the events the client receives and the request's log entry are compared with what gw gave before streams were relayed as bytes (test/e2e/stream-golden.json; GOLDEN_UPDATE=1 writes it).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const RECORDINGS = '/work/shared/fixtures/providers/recordings'
const GOLDEN = join(import.meta.dir, 'stream-golden.json')
const UPDATE = process.env.GOLDEN_UPDATE === '1'

/** Which endpoint each provider's recordings go through, and the upstream path gw calls. */
const SUITES = {
  anthropic: { dir: 'anthropic', path: '/v1/messages', upstream: '/v1/messages', body: { model: 'anthropic/claude-sonnet-4-5', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'hi' }] } },
  responses: { dir: 'openai-responses', path: '/v1/responses', upstream: '/v1/responses', body: { model: 'openai/gpt-4o-mini', input: 'hi', stream: true } },
  chat: {
    dir: 'openai',
    path: '/v1/chat/completions',
    upstream: '/v1/chat/completions',
    body: { model: 'openai/gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] },
  },
} as const

const recordings = (dir: string) =>
  existsSync(join(RECORDINGS, dir))
    ? readdirSync(join(RECORDINGS, dir))
        .filter((n) => n.endsWith('.sse'))
        .sort()
    : []

/** The stream now being replayed, cut into pieces of 1–97 bytes (deterministic): events and lines split across reads. */
let replaying: Uint8Array = new Uint8Array()
const upstream = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: async (req) => {
    await req.arrayBuffer()
    const bytes = replaying
    let seed = bytes.length
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        let at = 0
        while (at < bytes.length) {
          seed = (seed * 1103515245 + 12345) % 2 ** 31
          const n = 1 + (seed % 97)
          c.enqueue(bytes.slice(at, at + n))
          at += n
          if (seed % 5 === 0) await Bun.sleep(0)
        }
        c.close()
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  },
})

const fake = (basePath: string) => ({ url: `http://127.0.0.1:${upstream.port}${basePath}`, apiKey: 'sk-golden' }) as unknown as FakeUpstream

let gw: TestGateway
beforeAll(async () => {
  gw = await startTestGateway({ openai: fake('/v1'), anthropic: fake('/v1') })
})
afterAll(async () => {
  await gw.stop()
  await upstream.stop(true)
})

/** SSE text → events as a client reads them (WHATWG: `event`, joined `data` lines; comments and ids dropped). */
function events(text: string): { event?: string; data: string }[] {
  const out: { event?: string; data: string }[] = []
  for (const block of text.replaceAll('\r\n', '\n').split('\n\n')) {
    let event: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':')
      if (colon === 0 || !line) continue
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') event = value
      else if (field === 'data') data.push(value)
    }
    if (data.length) out.push(event === undefined ? { data: data.join('\n') } : { event, data: data.join('\n') })
  }
  return out
}

/** What differs from one run to the next: ids, times and latencies gw makes per request. */
function stable(text: string, requestId: string): string {
  return text
    .replaceAll(requestId, '<request-id>')
    .replaceAll(requestId.replaceAll('-', ''), '<request-id-hex>')
    .replace(/"created":\d+/g, '"created":0')
}

function stableEntry(entry: Record<string, unknown>): Record<string, unknown> {
  const { requestId: _id, createdAt: _at, latencyMs: _l, upstreamLatencyMs: _u, ttftMs: _t, subject: _s, attempts, ...rest } = entry
  return { ...rest, attempts: (attempts as Record<string, unknown>[]).map(({ latencyMs: _a, ...a }) => a) }
}

type Golden = Record<string, { status: number; events: { event?: string; data: string }[]; entry: Record<string, unknown> }>
const golden: Golden = existsSync(GOLDEN) ? (JSON.parse(readFileSync(GOLDEN, 'utf8')) as Golden) : {}
const seen: Golden = {}
afterAll(() => {
  if (UPDATE) writeFileSync(GOLDEN, `${JSON.stringify(seen, null, 1)}\n`)
})

for (const [name, suite] of Object.entries(SUITES)) {
  describe(name, () => {
    // Whole, and cut at 60 % of its bytes (mid-event, usually): an upstream that fails mid-stream.
    for (const [file, cut] of recordings(suite.dir).flatMap((f) => [[f, false] as const, [f, true] as const])) {
      test(`${file}${cut ? ' (cut short)' : ''}`, async () => {
        const whole = new Uint8Array(readFileSync(join(RECORDINGS, suite.dir, file)))
        replaying = cut ? whole.slice(0, Math.floor(whole.length * 0.6)) : whole
        const res = await gw.fetch(suite.path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(suite.body) })
        const id = res.headers.get('x-gw-request-id') as string
        const got = { status: res.status, events: events(stable(await res.text(), id)), entry: {} as Record<string, unknown> }
        await gw.gw.deps.logs.flush()
        let entry: Record<string, unknown> = {}
        for (let i = 0; i < 100 && !entry.requestId; i++) {
          entry = await gw.log(id).catch(() => ({}))
          if (!entry.requestId) await Bun.sleep(10)
        }
        got.entry = JSON.parse(stable(JSON.stringify(stableEntry(entry)), id))
        const key = `${name}/${file}${cut ? ' (cut short)' : ''}`
        seen[key] = got
        if (!UPDATE) {
          expect(golden[key]).toBeDefined()
          expect(got.status).toBe(golden[key]?.status as number)
          expect(got.events).toEqual(golden[key]?.events as never)
          expect(got.entry).toEqual(golden[key]?.entry as never)
        }
      })
    }
  })
}

describe('bytes as received', () => {
  const anthropic = () => new Uint8Array(readFileSync(join(RECORDINGS, 'anthropic', 'stream-text.llm-anthropic.sse')))
  const send = () => gw.fetch('/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(SUITES.anthropic.body) })

  test.skipIf(!existsSync(RECORDINGS))('Anthropic on /v1/messages: the client gets the upstream bytes unchanged, comments and extra fields included', async () => {
    const text = new TextDecoder().decode(anthropic())
    // What a relay that re-encoded each event would drop or rewrite: a comment, an `id:` line, `data:` without its space.
    const odd = `: keep-alive\n\n${text.replace('event: ping\ndata: {"type": "ping"}', 'event: ping\nid: 7\ndata:{"type": "ping"}')}`
    replaying = new TextEncoder().encode(odd)
    const res = await send()
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(odd)
  })

  test.skipIf(!existsSync(RECORDINGS))('CRLF framing (which the byte scan does not follow) gives the client the same events, event by event', async () => {
    const lf = new TextDecoder().decode(anthropic())
    replaying = new TextEncoder().encode(lf)
    const expected = events(await (await send()).text())
    replaying = new TextEncoder().encode(lf.replaceAll('\n', '\r\n'))
    const res = await send()
    expect(res.status).toBe(200)
    expect(events(await res.text())).toEqual(expected)
  })
})
