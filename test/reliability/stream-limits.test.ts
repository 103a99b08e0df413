// Streams cannot be hoarded: concurrent streams are capped per org and per credential, and a stream whose client stops reading is ended.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_CLIENT_READ_TIMEOUT_MS: '400', GW_UPSTREAM_TIMEOUT_MS: '60000' })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

const streamBody = JSON.stringify({ model: 'openai/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] })

/** Opens a streamed chat on a raw socket and never reads a byte of the answer. */
function openUnreadStream(key: string): Socket {
  const { port } = new URL(gw.url)
  const socket = connect(Number(port), '127.0.0.1', () => {
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: GwKey ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(streamBody)}\r\n\r\n${streamBody}`,
    )
    socket.pause()
  })
  socket.on('error', () => {})
  return socket
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await Bun.sleep(20)
  }
  return check()
}

test('a client that stops reading a stream has it ended, and the upstream connection released', async () => {
  openai.reset()
  // About 8 MB of answer: far more than the socket buffers between gw and a client that reads nothing.
  openai.enqueue({ kind: 'reply', text: 'word '.repeat(1_600_000), chunks: 800, chunkDelayMs: 1 })
  const socket = openUnreadStream(gw.key)
  try {
    expect(await until(() => openai.requests.length === 1, 5_000)).toBe(true)
    // Ended after the 400 ms read timeout (generous bound); before, it stayed open as long as the client did.
    expect(await openai.waitForAbort(0, 10_000)).toBe(true)
    expect(await until(() => gw.gw.deps.inFlight.size === 0, 5_000)).toBe(true)
    expect(gw.gw.deps.streams.count('org:default')).toBe(0)
  } finally {
    socket.destroy()
  }
}, 20_000)

test('concurrent streams are capped per credential and per org (429), and a finished stream frees its slot', async () => {
  openai.reset()
  const id = 'streams-capped'
  await gw.admin('POST', '/orgs', { id, name: id })
  await gw.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
  expect((await gw.admin('PUT', `/orgs/${id}/policy`, { maxConcurrentStreamsPerKey: 2, maxConcurrentStreams: 3 })).status).toBe(200)
  const newKey = async () => ((await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }).key
  const [a, b] = [await newKey(), await newKey()]
  openai.setDefault({ kind: 'stall-after', events: 3 })
  // Each open stream's response is kept as well as its controller: a Response nobody refers to may be
  // collected, and its unread body cancelled, which ends the stream and gives its slot back early.
  const held: { ac: AbortController; res: Response }[] = []
  const open = async (key: string) => {
    const ac = new AbortController()
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
      body: streamBody,
      signal: ac.signal,
    })
    if (res.status === 200) held.push({ ac, res })
    else await res.text()
    return res
  }
  try {
    expect((await open(a)).status).toBe(200)
    expect((await open(a)).status).toBe(200)
    const third = await open(a)
    expect(third.status).toBe(429)
    expect(third.headers.get('retry-after')).toBe('1')
    expect((await open(b)).status).toBe(200) // another key of the org still may, up to the org's 3
    const overOrg = await open(b)
    expect(overOrg.status).toBe(429)
    held.shift()?.ac.abort() // a client leaves: its slot comes back
    expect(await until(() => gw.gw.deps.streams.count(`org:${id}`) === 2, 5_000)).toBe(true)
    expect((await open(a)).status).toBe(200)
  } finally {
    for (const h of held) h.ac.abort()
    openai.reset()
  }
}, 20_000)
