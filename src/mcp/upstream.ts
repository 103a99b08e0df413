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

/** How long a refresh's answer is shared with calls that refresh the same grant a little later. */
const REFRESH_SHARED_MS = 10_000
type Answer = { status: number; headers: [string, string][]; body: string }
/** Refreshes under way or just done, by token endpoint and refresh token. */
const refreshes = new Map<string, Promise<Answer>>()

/**
 * A token request refreshing a grant another call refreshes at the same time gets that call's answer:
 * authorization servers rotate refresh tokens (OAuth 2.1), so a second refresh with the same one is
 * refused, and the user would be asked to authorise again. Undefined for any other request.
 */
function sharedRefresh(fetchFn: typeof fetch, url: string | URL | Request, init: RequestInit | undefined): Promise<Response> | undefined {
  const params = init?.body instanceof URLSearchParams ? init.body : undefined
  const token = params?.get('grant_type') === 'refresh_token' ? params.get('refresh_token') : null
  if (!token) return undefined
  const key = `${String(url)} ${token}`
  let answer = refreshes.get(key)
  if (!answer) {
    const made = fetchFn(url, init).then(async (res): Promise<Answer> => ({ status: res.status, headers: [...res.headers], body: await res.text() }))
    refreshes.set(key, made)
    made.then(
      () => setTimeout(() => refreshes.delete(key), REFRESH_SHARED_MS).unref(),
      () => refreshes.delete(key),
    )
    answer = made
  }
  return answer.then((a) => new Response(a.body, { status: a.status, headers: a.headers }))
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
      let outbound: RequestInit = { ...init, redirect: 'manual' }
      if (new URL(url).origin === origin) {
        const headers = new Headers(init?.headers)
        for (const [k, v] of Object.entries(own)) if (!headers.has(k)) headers.set(k, v)
        outbound = { ...outbound, headers }
      }
      return sharedRefresh(opts.fetch, url, outbound) ?? opts.fetch(url, outbound)
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
