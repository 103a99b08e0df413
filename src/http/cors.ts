// Browsers (PRODUCT §4): GW_CORS_ORIGINS answers preflights and adds Access-Control-* headers that expose x-gw-*.

import { REQUEST_ID_HEADER } from './request-context'

/** Response headers a browser script may read: gw's own, plus what OpenAI clients look at. */
const EXPOSED = [
  REQUEST_ID_HEADER,
  'x-gw-model',
  'x-gw-auth-mode',
  'x-gw-fallback',
  'x-gw-fallback-reason',
  'x-gw-fallback-model',
  'x-gw-cost-usd',
  'x-gw-cache',
  'x-gw-estimated',
  'retry-after',
  'x-should-retry',
  // The MCP gateway's session (PRODUCT §20): a browser MCP client reads it from the initialize answer.
  'mcp-session-id',
].join(', ')
const METHODS = 'GET, POST, PUT, DELETE, OPTIONS'
const REQUEST_HEADERS =
  'authorization, content-type, x-api-key, anthropic-version, anthropic-beta, x-gw-end-user-id, x-gw-error-format, x-gw-fallback-chain, x-gw-metadata, x-gw-prompt-id, x-gw-cache, x-gw-cache-ttl, mcp-session-id, mcp-protocol-version, last-event-id'

/** Why a GW_CORS_ORIGINS entry can never match a browser's Origin header (`*`, or `scheme://host[:port]`), or undefined. */
export function corsOriginProblem(entry: string): string | undefined {
  if (entry === '*') return undefined
  let origin: string | undefined
  try {
    const url = new URL(entry)
    if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin
  } catch {}
  return origin === entry
    ? undefined
    : `GW_CORS_ORIGINS entries must be origins as browsers send them (https://app.example.com, with a port when not the scheme's own) or *, got "${entry.slice(0, 64)}"`
}

export class Cors {
  private readonly any: boolean
  private readonly origins: ReadonlySet<string>

  constructor(origins: readonly string[]) {
    this.any = origins.includes('*')
    this.origins = new Set(origins)
  }

  get enabled(): boolean {
    return this.any || this.origins.size > 0
  }

  /** The headers for a request from `origin`, or undefined when that origin is not allowed. */
  headersFor(origin: string | null): Record<string, string> | undefined {
    if (!origin || !(this.any || this.origins.has(origin))) return undefined
    return {
      'access-control-allow-origin': this.any ? '*' : origin,
      'access-control-expose-headers': EXPOSED,
      ...(this.any ? {} : { vary: 'Origin' }),
    }
  }

  /** A preflight's answer: 204 with what may be sent (no CORS headers for an origin not allowed). */
  preflight(request: Request): Response {
    const allowed = this.headersFor(request.headers.get('origin'))
    if (!allowed) return new Response(null, { status: 204 })
    return new Response(null, {
      status: 204,
      headers: {
        ...allowed,
        'access-control-allow-methods': METHODS,
        // Whatever the page asks to send (x-gw-* headers and the SDKs' own x-stainless-* among them).
        'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? REQUEST_HEADERS,
        'access-control-max-age': '600',
      },
    })
  }
}
