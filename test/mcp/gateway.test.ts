// The MCP gateway at /mcp (PRODUCT §20) with the official SDK on both sides over real sockets: the org's
// servers aggregated, calls routed, secrets kept to their server, a server down, 401, logs and metrics.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { SESSION_LIMITS } from '../../src/mcp/sessions'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let alpha: FakeMcpServer
let beta: FakeMcpServer
/** The McpServer of each session beta has had, newest last. */
const betaSessions: McpServer[] = []
const ALPHA_SECRET = 'alpha-bearer-secret-0001'

beforeAll(async () => {
  alpha = await startMcpServer({
    build: (s) => {
      s.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `alpha says ${text}` }] }))
      s.registerTool('count', { description: 'Counts to n with progress', inputSchema: { n: z.number() } }, async ({ n }, extra) => {
        const token = extra._meta?.progressToken
        for (let i = 1; i <= n; i++) {
          if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } })
          await Bun.sleep(20)
        }
        return { content: [{ type: 'text', text: `counted to ${n}` }] }
      })
      s.registerTool('sleep', { description: 'Sleeps until cancelled' }, async (extra) => {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000)
          extra.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()))
        })
        return { content: [{ type: 'text', text: 'woke' }] }
      })
      s.registerTool('fail', { description: 'Always a tool error' }, async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }))
      s.registerResource('readme', 'mem://alpha/readme', { mimeType: 'text/plain' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'alpha readme' }] }))
    },
  })
  beta = await startMcpServer({
    build: (s) => {
      betaSessions.push(s)
      s.registerTool('add', { description: 'Adds', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }))
      s.registerPrompt('greet', { description: 'A greeting', argsSchema: { who: z.string() } }, ({ who }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello ${who}` } }] }))
    },
  })
  gw = await startTestGateway()
  expect((await gw.admin('PUT', '/orgs/default/mcp-servers/alpha', { url: alpha.url, auth: { kind: 'bearer', token: ALPHA_SECRET }, headers: { 'x-alpha-team': 'blue' } })).status).toBe(200)
  expect((await gw.admin('PUT', '/orgs/default/mcp-servers/beta', { url: beta.url })).status).toBe(200)
})
afterAll(async () => {
  await gw.stop()
  await alpha.stop()
  await beta.stop()
})

/** An SDK client connected to gw's /mcp with only a URL and headers, as an MCP client is configured. */
async function connect(headers: Record<string, string> = { authorization: `Bearer ${gw.key}` }): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers } }))
  return client
}

const text = (r: object) => (((r as { content?: unknown }).content as { type: string; text: string }[])[0] as { text: string }).text

describe('aggregation and routing', () => {
  test('tools/list is the union of the servers, each tool named <server>__<tool>', async () => {
    const c = await connect()
    try {
      const names = (await c.listTools()).tools.map((t) => t.name).sort()
      expect(names).toEqual(['alpha__count', 'alpha__echo', 'alpha__fail', 'alpha__sleep', 'beta__add'])
      const echo = (await c.listTools()).tools.find((t) => t.name === 'alpha__echo')
      expect(echo?.description).toBe('Echoes its text')
      expect(echo?.inputSchema.properties).toHaveProperty('text')
    } finally {
      await c.close()
    }
  })

  test('tools/call goes to the server its prefix names, under the upstream tool name', async () => {
    const c = await connect()
    try {
      alpha.requests.length = 0
      beta.requests.length = 0
      expect(text(await c.callTool({ name: 'alpha__echo', arguments: { text: 'hi' } }))).toBe('alpha says hi')
      expect(text(await c.callTool({ name: 'beta__add', arguments: { a: 2, b: 40 } }))).toBe('42')
      expect(alpha.requests.filter((r) => r.rpc === 'tools/call')).toHaveLength(1)
      expect(beta.requests.filter((r) => r.rpc === 'tools/call')).toHaveLength(1)
    } finally {
      await c.close()
    }
  })

  test('resources and prompts are aggregated too', async () => {
    const c = await connect()
    try {
      expect((await c.listResources()).resources.map((r) => r.uri)).toEqual(['mem://alpha/readme'])
      expect((await c.readResource({ uri: 'mem://alpha/readme' })).contents[0]).toMatchObject({ text: 'alpha readme' })
      expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['beta__greet'])
      const p = await c.getPrompt({ name: 'beta__greet', arguments: { who: 'Ada' } })
      expect(p.messages[0]?.content).toEqual({ type: 'text', text: 'Hello Ada' })
    } finally {
      await c.close()
    }
  })

  test("a tool's progress reaches the client as it happens, before the result", async () => {
    const c = await connect()
    try {
      const seen: number[] = []
      const r = await c.callTool({ name: 'alpha__count', arguments: { n: 3 } }, undefined, { onprogress: (p) => void seen.push(p.progress) })
      expect(seen).toEqual([1, 2, 3])
      expect(text(r)).toBe('counted to 3')
    } finally {
      await c.close()
    }
  })

  test("an upstream's tools/list_changed reaches the client, and the new tool is listed", async () => {
    const c = await connect()
    let changed = 0
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++)
    try {
      await c.listTools()
      const upstream = betaSessions.at(-1) as McpServer
      upstream.registerTool('later', { description: 'Added while connected' }, async () => ({ content: [{ type: 'text', text: 'late' }] }))
      for (let i = 0; i < 100 && !changed; i++) await Bun.sleep(10)
      expect(changed).toBe(1)
      expect((await c.listTools()).tools.map((t) => t.name)).toContain('beta__later')
    } finally {
      await c.close()
    }
  })

  test('a server switched off (enabled: false) is left out and its tools unknown, at once in an open session', async () => {
    const c = await connect()
    try {
      expect((await gw.admin('PUT', '/orgs/default/mcp-servers/beta', { url: beta.url, enabled: false })).status).toBe(200)
      expect((await c.listTools()).tools.some((t) => t.name.startsWith('beta__'))).toBe(false)
      const err = (await c.callTool({ name: 'beta__add', arguments: { a: 1, b: 1 } }).catch((e: unknown) => e)) as McpError
      expect(err.code).toBe(-32602)
    } finally {
      await gw.admin('PUT', '/orgs/default/mcp-servers/beta', { url: beta.url })
      await c.close()
    }
  })

  test("an unknown tool is the JSON-RPC invalid-params error", async () => {
    const c = await connect()
    try {
      const err = await c.callTool({ name: 'nope__x', arguments: {} }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(McpError)
      expect((err as McpError).code).toBe(-32602)
    } finally {
      await c.close()
    }
  })
})

describe('credentials', () => {
  test("the bearer secret and headers reach only their own server; the caller's gw credential reaches none", async () => {
    alpha.requests.length = 0
    beta.requests.length = 0
    const c = await connect({ authorization: `Bearer ${gw.key}`, 'x-gw-end-user-id': 'ada' })
    try {
      await c.callTool({ name: 'alpha__echo', arguments: { text: 'x' } })
      await c.callTool({ name: 'beta__add', arguments: { a: 1, b: 1 } })
    } finally {
      await c.close()
    }
    expect(alpha.requests.length).toBeGreaterThan(0)
    for (const r of alpha.requests) {
      expect(r.headers.authorization).toBe(`Bearer ${ALPHA_SECRET}`)
      expect(r.headers['x-alpha-team']).toBe('blue')
    }
    expect(beta.requests.length).toBeGreaterThan(0)
    for (const r of beta.requests) {
      expect(r.headers.authorization).toBeUndefined()
      expect(r.headers['x-alpha-team']).toBeUndefined()
    }
    const all = JSON.stringify([...alpha.requests, ...beta.requests])
    expect(all).not.toContain(gw.key)
    expect(JSON.stringify(beta.requests)).not.toContain(ALPHA_SECRET)
  })

  test('without a credential: 401 in gw\'s error shape, and the SDK client cannot connect', async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    })
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: true, code: 'unauthorized', requestId: res.headers.get('x-gw-request-id') })
    await expect(connect({})).rejects.toThrow()
    await expect(connect({ authorization: 'Bearer gw_sk_000000000000000000000000000000000000000000000' })).rejects.toThrow()
  })

  test("another caller's session id is not found", async () => {
    const c = await connect()
    const other = await (await gw.admin('POST', '/orgs/default/service-keys', { name: 'other' })).json() as { key: string }
    try {
      const transport = c.transport as StreamableHTTPClientTransport
      const res = await fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.key}`, 'mcp-session-id': transport.sessionId as string, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      })
      expect(res.status).toBe(404)
    } finally {
      await c.close()
    }
  })
})

test("ending the session (DELETE) ends gw's sessions with the upstream servers", async () => {
  const c = await connect()
  await c.listTools()
  const open = alpha.sessions()
  await (c.transport as StreamableHTTPClientTransport).terminateSession()
  await c.close()
  for (let i = 0; i < 50 && alpha.sessions() >= open; i++) await Bun.sleep(10)
  expect(alpha.sessions()).toBe(open - 1)
})

test("past a credential's share of sessions its least recently used one is closed; another credential's are not", async () => {
  const before = SESSION_LIMITS.perCaller
  SESSION_LIMITS.perCaller = 2
  const other = ((await (await gw.admin('POST', '/orgs/default/service-keys', { name: 'share' })).json()) as { key: string }).key
  const theirs = await connect({ authorization: `Bearer ${other}` })
  const [a, b] = [await connect(), await connect()]
  try {
    await a.listTools()
    await b.listTools()
    await theirs.listTools()
    const c = await connect()
    await c.listTools()
    // a was used longest ago: its session is gone (404), b and c and the other key's go on.
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.key}`, 'mcp-session-id': (a.transport as StreamableHTTPClientTransport).sessionId as string, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    })
    expect(res.status).toBe(404)
    expect((await b.listTools()).tools.length).toBeGreaterThan(0)
    expect((await theirs.listTools()).tools.length).toBeGreaterThan(0)
    await c.close()
  } finally {
    SESSION_LIMITS.perCaller = before
    for (const x of [a, b, theirs]) await x.close()
  }
})

describe('a server down', () => {
  test('its tools are missing and a call to it fails, while the other servers answer', async () => {
    const gone = await startMcpServer({ build: (s) => s.registerTool('ping', { description: 'p' }, async () => ({ content: [{ type: 'text', text: 'pong' }] })) })
    // Some servers take a key in the query string: it is never repeated to the caller or in the log.
    const url = `${gone.url}?key=query-SECRET-1234`
    await gone.stop()
    const c = await connect()
    // Registered while the session is open: the next request sees it.
    expect((await gw.admin('PUT', '/orgs/default/mcp-servers/gone', { url })).status).toBe(200)
    try {
      expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(['alpha__count', 'alpha__echo', 'alpha__fail', 'alpha__sleep', 'beta__add'])
      const err = (await c.callTool({ name: 'gone__ping', arguments: {} }).catch((e: unknown) => e)) as McpError
      expect(err).toBeInstanceOf(McpError)
      expect(err.message).toContain('"gone" is out of reach')
      expect(err.message).not.toContain('query-SECRET-1234')
      const logged = (await (await gw.fetch('/v1/logs?metadata=mcpServer=gone')).json()) as { data: { errorMessage: string }[] }
      expect(logged.data[0]?.errorMessage).toContain('is out of reach')
      expect(JSON.stringify(logged)).not.toContain('query-SECRET-1234')
      expect(text(await c.callTool({ name: 'beta__add', arguments: { a: 1, b: 2 } }))).toBe('3')
    } finally {
      await c.close()
      await gw.admin('DELETE', '/orgs/default/mcp-servers/gone')
    }
  })
})

test('a call the client cancels is cancelled upstream too, and logged as 499', async () => {
  const c = await connect()
  try {
    alpha.requests.length = 0
    const stop = new AbortController()
    const pending = c.callTool({ name: 'alpha__sleep', arguments: {} }, undefined, { signal: stop.signal }).catch((e: unknown) => e)
    for (let i = 0; i < 100 && !alpha.requests.some((r) => r.rpc === 'tools/call'); i++) await Bun.sleep(10)
    stop.abort('changed my mind')
    expect(await pending).toBeInstanceOf(Error)
    for (let i = 0; i < 100 && !alpha.requests.some((r) => r.rpc === 'notifications/cancelled'); i++) await Bun.sleep(10)
    expect(alpha.requests.some((r) => r.rpc === 'notifications/cancelled')).toBe(true)
    let page: { data: { mcp: { tool: string }; errorCode: string }[] } = { data: [] }
    for (let i = 0; i < 100 && !page.data.length; i++) {
      await Bun.sleep(10)
      page = (await (await gw.fetch('/v1/logs?status=499')).json()) as typeof page
    }
    expect(page.data[0]).toMatchObject({ mcp: { tool: 'sleep' }, errorCode: 'gateway_error' })
  } finally {
    await c.close()
  }
})

describe('records', () => {
  test('every tool call is a log entry: server, tool, end user, status, latency, arguments and result', async () => {
    const c = await connect({ authorization: `Bearer ${gw.key}`, 'x-gw-end-user-id': 'user-42' })
    try {
      const ok = await c.callTool({ name: 'alpha__echo', arguments: { text: 'logged' } })
      const id = (ok._meta as Record<string, string>)['gw/requestId'] as string
      const entry = await gw.log(id)
      expect(entry).toMatchObject({
        requestId: id,
        endpoint: '/mcp',
        orgId: 'default',
        authMode: 'GwKey',
        endUserId: 'user-42',
        status: 200,
        errorCode: null,
        mcp: { server: 'alpha', tool: 'echo' },
        model: 'alpha__echo',
        metadata: { mcpServer: 'alpha', mcpTool: 'echo' },
        requestBody: { text: 'logged' },
        responseBody: { content: [{ type: 'text', text: 'alpha says logged' }] },
      })
      expect(entry.latencyMs).toBeGreaterThanOrEqual(0)
      const failed = await c.callTool({ name: 'alpha__fail', arguments: {} })
      expect(failed.isError).toBe(true)
      const page = (await (await gw.fetch('/v1/logs?metadata=mcpServer=alpha&user=user-42')).json()) as { data: { mcp: { tool: string } }[] }
      expect(page.data.map((e) => e.mcp.tool)).toEqual(['fail', 'echo'])
    } finally {
      await c.close()
    }
  })

  test('gw_mcp_calls_total counts calls by server, tool and status', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text()
    expect(metrics).toMatch(/gw_mcp_calls_total\{server="alpha",tool="echo",status="ok"\} [1-9]/)
    expect(metrics).toMatch(/gw_mcp_calls_total\{server="alpha",tool="fail",status="tool_error"\} 1/)
    expect(metrics).toMatch(/gw_mcp_calls_total\{server="gone",tool="ping",status="unreachable"\} 1/)
    // A name the client made up is not a label of its own.
    expect(metrics).toMatch(/gw_mcp_calls_total\{server="unknown",tool="unknown",status="unknown_tool"\} [1-9]/)
    expect(metrics).not.toContain('server="nope"')
  })
})

test('sessions opened and ended in a loop leave no upstream session behind', async () => {
  const before = [alpha.sessions(), beta.sessions()]
  for (let i = 0; i < 30; i++) {
    const c = await connect()
    await c.listTools()
    await (c.transport as StreamableHTTPClientTransport).terminateSession()
    await c.close()
  }
  for (let i = 0; i < 100 && (alpha.sessions() > (before[0] as number) || beta.sessions() > (before[1] as number)); i++) await Bun.sleep(10)
  expect([alpha.sessions(), beta.sessions()]).toEqual(before)
})

test('at shutdown an open session (its event stream included) is ended after the drain time, not left holding gw', async () => {
  const own = await startTestGateway({}, { GW_DRAIN_MS: '200' })
  await own.admin('PUT', '/orgs/default/mcp-servers/beta', { url: beta.url })
  const c = new Client({ name: 'agent', version: '1' })
  await c.connect(new StreamableHTTPClientTransport(new URL(`${own.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${own.key}` } } }))
  await c.listTools()
  const open = beta.sessions()
  const started = performance.now()
  await own.stop()
  expect(performance.now() - started).toBeLessThan(2000)
  // gw ended its session with the upstream server too.
  for (let i = 0; i < 50 && beta.sessions() >= open; i++) await Bun.sleep(10)
  expect(beta.sessions()).toBe(open - 1)
  await c.close()
})

test("an upstream error that echoes the server's secrets (its bearer token, its headers) reaches the caller and the log without them", async () => {
  const BEARER = 'LEAKY-BEARER-SECRET-0123456789'
  const HEADER = 'LEAKY-HEADER-SECRET-0123456789'
  const leaky = await startMcpServer({
    build: (s) =>
      s.registerTool('leak', { description: 'Echoes what it was sent, in an error' }, async (extra) => {
        const h = (extra.requestInfo?.headers ?? {}) as Record<string, string>
        throw new McpError(-32602, `bad call; you sent ${h.authorization} and ${h['x-leaky-key']}`, { auth: h.authorization, key: h['x-leaky-key'] })
      }),
  })
  expect((await gw.admin('PUT', '/orgs/default/mcp-servers/leaky', { url: leaky.url, auth: { kind: 'bearer', token: BEARER }, headers: { 'x-leaky-key': HEADER } })).status).toBe(200)
  const c = await connect()
  try {
    // The SDK's server answers a tool's throw as a tool error (isError) holding its message.
    const answer = await c.callTool({ name: 'leaky__leak', arguments: {} })
    expect(answer.isError).toBe(true)
    const seen = JSON.stringify(answer)
    expect(seen).toContain('bad call; you sent Bearer [redacted] and [redacted]')
    for (const secret of [BEARER, HEADER]) expect(seen).not.toContain(secret)
    const entry = await gw.log((answer._meta as Record<string, string>)['gw/requestId'] as string)
    expect(entry).toMatchObject({ model: 'leaky__leak' })
    for (const secret of [BEARER, HEADER]) expect(JSON.stringify(entry)).not.toContain(secret)
  } finally {
    await c.close()
    await gw.admin('DELETE', '/orgs/default/mcp-servers/leaky')
    await leaky.stop()
  }
})
