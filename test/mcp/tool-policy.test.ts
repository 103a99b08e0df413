// Tool policy of the MCP gateway (PRODUCT §20): allowed/denied globs on the org's policy and on service
// keys (a key narrows the org's), denied tools hidden and refused, and the org's tool-call rate.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let alpha: FakeMcpServer
let beta: FakeMcpServer

beforeAll(async () => {
  const tool = (s: Parameters<Parameters<typeof startMcpServer>[0]['build']>[0], name: string) =>
    s.registerTool(name, { description: name, inputSchema: { x: z.string().optional() } }, async () => ({ content: [{ type: 'text', text: name }] }))
  alpha = await startMcpServer({ build: (s) => ['read', 'write', 'delete'].forEach((n) => tool(s, n)) })
  beta = await startMcpServer({ build: (s) => tool(s, 'search') })
  gw = await startTestGateway()
  await gw.admin('PUT', '/orgs/default/mcp-servers/alpha', { url: alpha.url })
  await gw.admin('PUT', '/orgs/default/mcp-servers/beta', { url: beta.url })
})
afterAll(async () => {
  await gw.stop()
  await alpha.stop()
  await beta.stop()
})
beforeEach(async () => {
  expect((await gw.admin('PUT', '/orgs/default/policy', {})).status).toBe(200)
})

async function connect(key = gw.key): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
  return client
}

async function withClient<T>(key: string, f: (c: Client) => Promise<T>): Promise<T> {
  const c = await connect(key)
  try {
    return await f(c)
  } finally {
    await c.close()
  }
}

const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort()
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as McpError)

describe("the org's policy", () => {
  test('a denied tool is absent from tools/list and its call refused with a JSON-RPC error, logged as 403', async () => {
    await gw.admin('PUT', '/orgs/default/policy', { mcp: { deniedTools: ['alpha__delete', 'beta__*'] } })
    await withClient(gw.key, async (c) => {
      expect(await names(c)).toEqual(['alpha__read', 'alpha__write'])
      const err = await refusal(c.callTool({ name: 'beta__search', arguments: {} }))
      expect(err).toBeInstanceOf(McpError)
      expect(err?.code).toBe(-32602)
      expect(err?.message).toContain("denied by the org's policy")
      expect(beta.requests.some((r) => r.rpc === 'tools/call')).toBe(false)
    })
    const page = (await (await gw.fetch('/v1/logs?status=403')).json()) as { data: { mcp: { server: string; tool: string }; errorCode: string }[] }
    expect(page.data[0]).toMatchObject({ mcp: { server: 'beta', tool: 'search' }, errorCode: 'forbidden' })
  })

  test('allowedTools keeps only the tools it names', async () => {
    await gw.admin('PUT', '/orgs/default/policy', { mcp: { allowedTools: ['alpha__read', 'beta__*'] } })
    await withClient(gw.key, async (c) => {
      expect(await names(c)).toEqual(['alpha__read', 'beta__search'])
      expect((await refusal(c.callTool({ name: 'alpha__write', arguments: {} })))?.message).toContain('not in the allowed tools')
    })
  })

  test('a change of policy applies to a session already open', async () => {
    await withClient(gw.key, async (c) => {
      expect(await names(c)).toHaveLength(4)
      await gw.admin('PUT', '/orgs/default/policy', { mcp: { deniedTools: ['alpha__*'] } })
      expect(await names(c)).toEqual(['beta__search'])
    })
  })

  test('a bad mcp policy is a 400 naming the field', async () => {
    const res = await gw.admin('PUT', '/orgs/default/policy', { mcp: { deniedTools: 'alpha__*' } })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toContain('mcp')
  })
})

describe("a service key's policy", () => {
  test('set at creation, it narrows what the key sees and calls; other keys are unaffected; it never widens the org\'s', async () => {
    const created = await gw.admin('POST', '/orgs/default/service-keys', { name: 'reader', mcp: { allowedTools: ['alpha__read', 'alpha__write'], deniedTools: ['alpha__write'] } })
    expect(created.status).toBe(201)
    const { key } = (await created.json()) as { key: string }
    await withClient(key, async (c) => {
      expect(await names(c)).toEqual(['alpha__read'])
      expect((await refusal(c.callTool({ name: 'beta__search', arguments: {} })))?.message).toContain("the service key's policy")
      expect((await c.callTool({ name: 'alpha__read', arguments: {} })).isError).toBeFalsy()
    })
    await withClient(gw.key, async (c) => expect(await names(c)).toHaveLength(4))
    await gw.admin('PUT', '/orgs/default/policy', { mcp: { deniedTools: ['alpha__read'] } })
    await withClient(key, async (c) => {
      expect(await names(c)).toEqual([])
      expect((await refusal(c.callTool({ name: 'alpha__read', arguments: {} })))?.message).toContain("denied by the org's policy")
    })
  })

  test('a rotated key keeps its tool policy', async () => {
    const made = (await (await gw.admin('POST', '/orgs/default/service-keys', { name: 'narrow', mcp: { allowedTools: ['beta__*'] } })).json()) as { id: string }
    const rotated = await gw.admin('POST', `/orgs/default/service-keys/${made.id}/rotate`, {})
    expect(rotated.status).toBe(201)
    const { key } = (await rotated.json()) as { key: string }
    await withClient(key, async (c) => expect(await names(c)).toEqual(['beta__search']))
  })

  test('a key whose endpoint scope leaves out /mcp is refused (403); one that names it connects', async () => {
    const make = async (endpoints: string[]) => ((await (await gw.admin('POST', '/orgs/default/service-keys', { scopes: { endpoints } })).json()) as { key: string }).key
    const chatOnly = await make(['/v1/chat/completions'])
    await expect(connect(chatOnly)).rejects.toThrow()
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${chatOnly}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ error: true, code: 'forbidden' })
    await withClient(await make(['/mcp']), async (c) => expect(await names(c)).toHaveLength(4))
  })

  test('a bad key policy is a 400', async () => {
    const res = await gw.admin('POST', '/orgs/default/service-keys', { mcp: { allowedTools: [1] } })
    expect(res.status).toBe(400)
  })
})

test("the org's tool-call rate: past requestsPerMinute a call is refused with a JSON-RPC error, logged as 429 and counted", async () => {
  await gw.admin('PUT', '/orgs/default/policy', { mcp: { requestsPerMinute: 2 } })
  await withClient(gw.key, async (c) => {
    await c.callTool({ name: 'alpha__read', arguments: {} })
    await c.callTool({ name: 'beta__search', arguments: {} })
    const err = await refusal(c.callTool({ name: 'alpha__read', arguments: {} }))
    expect(err).toBeInstanceOf(McpError)
    expect(err?.message).toMatch(/Rate limit exceeded for the MCP tool calls of org "default": 2 per minute; retry in \d+ s/)
    expect(err?.data).toMatchObject({ code: 'rate_limit_exceeded', retryAfterSeconds: expect.any(Number) })
    // Listing is not a tool call.
    expect(await names(c)).toHaveLength(4)
  })
  const page = (await (await gw.fetch('/v1/logs?status=429')).json()) as { data: { errorCode: string }[] }
  expect(page.data[0]?.errorCode).toBe('rate_limit_exceeded')
  const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text()
  expect(metrics).toMatch(/gw_mcp_calls_total\{server="alpha",tool="read",status="rate_limited"\} 1/)
})
