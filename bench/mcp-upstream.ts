// A local MCP server for `bun bench/mcp.ts`: the SDK's McpServer with one `echo` tool over its web-standard
// Streamable HTTP transport (one transport per session, JSON answers); prints {"port": …} once listening.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { z } from 'zod'

const transports = new Map<string, WebStandardStreamableHTTPServerTransport>()

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const id = req.headers.get('mcp-session-id')
    let t = id ? transports.get(id) : undefined
    if (!t) {
      if (id) return new Response('unknown session', { status: 404 })
      const fresh = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => void transports.set(sid, fresh),
        onsessionclosed: (sid) => void transports.delete(sid),
      })
      const mcp = new McpServer({ name: 'bench', version: '1' })
      mcp.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }))
      await mcp.connect(fresh)
      t = fresh
    }
    return t.handleRequest(req)
  },
})
console.log(JSON.stringify({ port: server.port }))
