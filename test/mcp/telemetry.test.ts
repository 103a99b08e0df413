// Each MCP tool call traced and in the access log (PRODUCT §20, §14): an execute_tool span with the GenAI
// conventions under the client's traceparent, exported over OTLP to a local receiver; a JSON access line.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { startTestGateway, type TestGateway } from '../helpers/gateway'
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver'
import { spawnGw } from '../helpers/process'

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const PARENT_ID = 'b7ad6b7169203331'
let gw: TestGateway
let tools: FakeMcpServer
let receiver: OtlpReceiver

beforeAll(async () => {
  tools = await startMcpServer({
    build: (s) => {
      s.registerTool('echo', { description: 'e', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }))
      s.registerTool('boom', { description: 'b' }, async () => {
        throw new Error('kaput')
      })
    },
  })
  receiver = await startOtlpReceiver()
  gw = await startTestGateway({}, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { traceExporter: { intervalMs: 20 } })
  await gw.admin('PUT', '/orgs/default/mcp-servers/tools', { url: tools.url })
})
afterAll(async () => {
  await gw.stop()
  await receiver.stop()
  await tools.stop()
})

test("a tool call is an execute_tool span under the client's traceparent", async () => {
  const c = new Client({ name: 'agent', version: '1' })
  const headers = { authorization: `Bearer ${gw.key}`, traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` }
  await c.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers } }))
  try {
    const r = await c.callTool({ name: 'tools__echo', arguments: { text: 'traced' } })
    const spans = await receiver.waitFor(1)
    const span = spans.find((s) => s.name === 'execute_tool tools__echo')
    expect(span).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID, kind: 3, status: { code: 0 } })
    expect(span?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'tools__echo',
      'gen_ai.tool.type': 'extension',
      'gw.mcp.server': 'tools',
      'gw.org_id': 'default',
      'gw.request_id': (r._meta as Record<string, string>)['gw/requestId'],
    })
    expect(typeof span?.attributes['gen_ai.tool.call.id']).toBe('string')
    expect(JSON.stringify(span?.attributes)).not.toContain('traced')
    // A tool that failed in its own way (isError) names it on its span.
    expect((await c.callTool({ name: 'tools__boom', arguments: {} })).isError).toBe(true)
    const failed = (await receiver.waitFor(2)).find((s) => s.name === 'execute_tool tools__boom')
    expect(failed?.attributes['error.type']).toBe('tool_error')
  } finally {
    await c.close()
  }
})

test('GW_LOG_FORMAT=json: a tool call is one access line like an API request, without its arguments or result', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-mcp-access-'))
  const key = `gw_sk_${'M1c2P3d4'.repeat(5)}wxyz`
  const proc = await spawnGw({ GW_LOG_FORMAT: 'json', GW_DB: join(dir, 'gw.db'), GW_SERVICE_KEY: key, GW_ADMIN_TOKEN: 'admin-token-for-the-mcp-access-test', GW_PROMPTS_DIR: join(dir, 'none') })
  try {
    await fetch(`${proc.url}/admin/orgs/default/mcp-servers/tools`, {
      method: 'PUT',
      headers: { authorization: 'Bearer admin-token-for-the-mcp-access-test', 'content-type': 'application/json' },
      body: JSON.stringify({ url: tools.url }),
    })
    const c = new Client({ name: 'agent', version: '1' })
    await c.connect(new StreamableHTTPClientTransport(new URL(`${proc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
    const r = await c.callTool({ name: 'tools__echo', arguments: { text: 'secret-argument-text' } })
    await c.close()
    proc.proc.kill('SIGTERM')
    await proc.proc.exited
    const lines = proc.output().split('\n').filter((l) => l.startsWith('{'))
    const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.endpoint === '/mcp')
    expect(line).toMatchObject({ requestId: (r._meta as Record<string, string>)['gw/requestId'], orgId: 'default', endpoint: '/mcp', model: 'tools__echo', status: 200 })
    expect(proc.output()).not.toContain('secret-argument-text')
  } finally {
    proc.proc.kill()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a tool call waits for room in a full log queue before it answers (back-pressure), and its entry is written', async () => {
  // One entry in the queue at most, written after 400 ms: the call's answer waits for its entry's room.
  const slow = await startTestGateway({}, {}, { logWriter: { maxQueue: 1, intervalMs: 400 } })
  try {
    await slow.admin('PUT', '/orgs/default/mcp-servers/tools', { url: tools.url })
    const c = new Client({ name: 'agent', version: '1' })
    await c.connect(new StreamableHTTPClientTransport(new URL(`${slow.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${slow.key}` } } }))
    try {
      const t0 = performance.now()
      const r = await c.callTool({ name: 'tools__echo', arguments: { text: 'queued' } })
      const waited = performance.now() - t0
      // Before: answered at once, the entry queued past the bound.
      expect(waited).toBeGreaterThan(250)
      const entry = await slow.log((r._meta as Record<string, string>)['gw/requestId'] as string)
      expect(entry).toMatchObject({ endpoint: '/mcp', status: 200 })
    } finally {
      await c.close()
    }
  } finally {
    await slow.stop()
  }
})
