// One connection from gw to an upstream MCP server (PRODUCT §20), with the official SDK's client over
// Streamable HTTP: the server's own headers, its bearer secret or the end user's OAuth tokens, never the caller's credential.

import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpServerRecord } from './records'

export const GW_CLIENT_INFO = { name: 'gw', version: '1' }

/** Seconds an upstream server has to answer initialize or a listing. */
export const LIST_TIMEOUT_MS = 15_000

export interface UpstreamOptions {
  fetch: typeof fetch
  /** For `auth.kind: "oauth"`: the end user's tokens. */
  oauth?: OAuthClientProvider
}

/**
 * Connects (initialize) to `server`. Its headers and secret go on the requests to its own origin only,
 * not to an OAuth authorization server the SDK talks to on the way; redirects are never followed, so
 * they never reach another host (PRODUCT §4).
 */
export async function connectUpstream(server: McpServerRecord, opts: UpstreamOptions): Promise<Client> {
  const own: Record<string, string> = { ...server.headers }
  if (server.auth.kind === 'bearer') own.authorization = `Bearer ${server.auth.token}`
  const origin = new URL(server.url).origin
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    fetch: (url, init) => {
      if (new URL(url).origin !== origin) return opts.fetch(url, { ...init, redirect: 'manual' })
      const headers = new Headers(init?.headers)
      for (const [k, v] of Object.entries(own)) if (!headers.has(k)) headers.set(k, v)
      return opts.fetch(url, { ...init, headers, redirect: 'manual' })
    },
    ...(opts.oauth ? { authProvider: opts.oauth } : {}),
  })
  const client = new Client(GW_CLIENT_INFO, { capabilities: {} })
  try {
    await client.connect(transport, { timeout: LIST_TIMEOUT_MS })
  } catch (err) {
    await client.close().catch(() => {})
    throw err
  }
  return client
}
