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
