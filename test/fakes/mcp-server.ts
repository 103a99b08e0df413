// An upstream MCP server for gateway tests: the official SDK's McpServer over its web-standard Streamable HTTP
// transport on Bun.serve (127.0.0.1:0), one transport per session, recording each request's headers.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'

export interface SeenRequest {
  method: string
  headers: Record<string, string>
  /** The JSON-RPC method of a POST, when it carried one. */
  rpc: string | undefined
}

export interface FakeMcpServer {
  url: string
  requests: SeenRequest[]
  /** Sessions the server has open. */
  sessions(): number
  stop(): Promise<void>
}

export interface FakeMcpOptions {
  /** Registers the server's tools, resources and prompts on each session's McpServer. */
  build: (server: McpServer) => void
  /**
   * A protected server (the MCP authorization spec): its protected-resource metadata names this authorization
   * server, and a request without a token `verify` accepts is refused with 401 and a WWW-Authenticate pointing at it.
   */
  oauth?: { authorizationServer: string; verify: (token: string) => AuthInfo | undefined }
}

export async function startMcpServer(opts: FakeMcpOptions): Promise<FakeMcpServer> {
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const requests: SeenRequest[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const prm = `${url.origin}/.well-known/oauth-protected-resource`
      if (opts.oauth && url.pathname.startsWith('/.well-known/oauth-protected-resource'))
        return Response.json({ resource: `${url.origin}/mcp`, authorization_servers: [opts.oauth.authorizationServer], bearer_methods_supported: ['header'] })
      if (url.pathname !== '/mcp') return new Response('not found', { status: 404 })
      const body = req.method === 'POST' ? ((await req.json()) as { method?: string }) : undefined
      requests.push({ method: req.method, headers: Object.fromEntries(req.headers), rpc: body?.method })
      let authInfo: AuthInfo | undefined
      if (opts.oauth) {
        const token = /^Bearer (\S+)$/.exec(req.headers.get('authorization') ?? '')?.[1]
        authInfo = token ? opts.oauth.verify(token) : undefined
        if (!authInfo)
          return Response.json({ error: 'invalid_token' }, { status: 401, headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${prm}"` } })
      }
      const id = req.headers.get('mcp-session-id')
      let transport = id ? transports.get(id) : undefined
      if (!transport) {
        if (id) return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 })
        const t = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (sid) => void transports.set(sid, t),
          onsessionclosed: (sid) => void transports.delete(sid),
        })
        const mcp = new McpServer({ name: 'fake', version: '1' })
        opts.build(mcp)
        await mcp.connect(t)
        transport = t
      }
      return transport.handleRequest(req, { parsedBody: body, ...(authInfo ? { authInfo } : {}) })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/mcp`,
    requests,
    sessions: () => transports.size,
    async stop() {
      for (const t of transports.values()) await t.close().catch(() => {})
      server.stop(true)
    },
  }
}
