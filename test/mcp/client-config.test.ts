// The client configuration docs/mcp.md shows (Claude Code's .mcp.json: a URL and headers) connects to gw's
// /mcp as written: the JSON is read from the page, its ${VARS} expanded as Claude Code does, and used as is.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { z } from 'zod'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let notes: FakeMcpServer

beforeAll(async () => {
  notes = await startMcpServer({
    build: (s) => s.registerTool('add_note', { description: 'Saves a note', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: `saved: ${text}` }] })),
  })
  gw = await startTestGateway()
  await gw.admin('PUT', '/orgs/default/mcp-servers/notes', { url: notes.url })
})
afterAll(async () => {
  await gw.stop()
  await notes.stop()
})

/** The JSON block under the page's `mcp-client-config` marker. */
function documentedConfig(): string {
  const page = readFileSync(join(import.meta.dir, '../../docs/mcp.md'), 'utf8')
  const m = /<!-- mcp-client-config[^>]*-->\s*```json\n([\s\S]*?)```/.exec(page)
  if (!m) throw new Error('docs/mcp.md has no mcp-client-config block')
  return m[1] as string
}

test("docs/mcp.md's .mcp.json connects: tools listed, a call made, the end user on its log entry", async () => {
  const env: Record<string, string> = { GW_URL: gw.url, GW_KEY: gw.key, USER: 'ada' }
  const expanded = documentedConfig().replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => env[name] ?? '')
  const server = (JSON.parse(expanded) as { mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }> }).mcpServers.gw
  expect(server?.type).toBe('http')
  const client = new Client({ name: 'claude-code', version: '2.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(server?.url as string), { requestInit: { headers: server?.headers } }))
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['notes__add_note'])
    const r = await client.callTool({ name: 'notes__add_note', arguments: { text: 'buy milk' } })
    expect(r.content).toEqual([{ type: 'text', text: 'saved: buy milk' }])
    const entry = await gw.log((r._meta as Record<string, string>)['gw/requestId'] as string)
    expect(entry).toMatchObject({ endUserId: 'ada', authMode: 'GwKey', mcp: { server: 'notes', tool: 'add_note' } })
  } finally {
    await client.close()
  }
})

/** One JSON-RPC message as gw answers it: JSON, or the `data:` of an SSE event. */
async function rpcAnswer(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text()
  if (res.headers.get('content-type')?.startsWith('application/json')) return JSON.parse(text) as Record<string, unknown>
  const data = text.split('\n').find((l) => l.startsWith('data: '))
  return JSON.parse(data?.slice(6) ?? 'null') as Record<string, unknown>
}

test('the wire of a 2025-06-18 client: initialize opens a session, notifications are accepted, tools/list answers on it, DELETE ends it', async () => {
  const headers = { authorization: `Bearer ${gw.key}`, 'x-gw-end-user-id': 'ada', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const init = await fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'claude-code', version: '2.0.0' } } }),
  })
  expect(init.status).toBe(200)
  const session = init.headers.get('mcp-session-id') as string
  expect(session).toMatch(/^[0-9a-f-]{36}$/)
  expect(init.headers.get('x-gw-request-id')).toBeTruthy()
  const hello = (await rpcAnswer(init)) as { result: { protocolVersion: string; capabilities: Record<string, unknown>; serverInfo: { name: string } } }
  expect(hello.result.protocolVersion).toBe('2025-06-18')
  expect(hello.result.capabilities).toHaveProperty('tools')
  expect(hello.result.serverInfo.name).toBe('gw')
  const onSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }
  const initialized = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: onSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  expect(initialized.status).toBe(202)
  const list = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: onSession, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }) })
  expect(list.status).toBe(200)
  expect(((await rpcAnswer(list)) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name)).toEqual(['notes__add_note'])
  expect((await fetch(`${gw.url}/mcp`, { method: 'DELETE', headers: onSession })).status).toBe(200)
  const after = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: onSession, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }) })
  expect(after.status).toBe(404)
})

test('a browser MCP client (GW_CORS_ORIGINS): the preflight allows the MCP headers, and the answer exposes mcp-session-id', async () => {
  const origin = 'http://inspector.example'
  const own = await startTestGateway({}, { GW_CORS_ORIGINS: origin })
  try {
    const pre = await fetch(`${own.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-protocol-version' },
    })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-headers')).toContain('mcp-protocol-version')
    const init = await fetch(`${own.url}/mcp`, {
      method: 'POST',
      headers: { origin, authorization: `Bearer ${own.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'inspector', version: '1' } } }),
    })
    expect(init.status).toBe(200)
    expect(init.headers.get('access-control-allow-origin')).toBe(origin)
    expect(init.headers.get('access-control-expose-headers')).toContain('mcp-session-id')
    expect(init.headers.get('mcp-session-id')).toBeTruthy()
    await init.text()
  } finally {
    await own.stop()
  }
})

test('an x-gw-end-user-id over 256 characters is a 400 naming it', async () => {
  const res = await fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.key}`, 'x-gw-end-user-id': 'u'.repeat(257), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  })
  expect(res.status).toBe(400)
  expect(await res.json()).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('x-gw-end-user-id') })
})
