// MCP gateway records (PRODUCT §20): an org's upstream MCP servers, the tool policies, and how their secrets are sealed.

import { type TSchema, Type as t } from '@sinclair/typebox'
import { validator } from '../schemas/chat-body'
import { badRequest, echo } from '../errors'
import { fieldError } from '../schemas/problems'

/** The path of gw's OAuth callback for MCP servers, under the address users' browsers reach gw at. */
export const CALLBACK_PATH = '/mcp/oauth/callback'

/** Server names become tool-name prefixes (`<server>__<tool>`): no "__" inside, so the split is unambiguous. */
export const MCP_SERVER_NAME = /^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,31}$/

/** How gw authenticates to an upstream server: nothing, a stored bearer secret, or each end user's own OAuth tokens. */
export type McpAuth =
  | { kind: 'none' }
  | { kind: 'bearer'; token: string }
  | { kind: 'oauth'; scope?: string; clientId?: string; clientSecret?: string }

/** One of an org's upstream MCP servers; `headers` values and secrets are decrypted only in memory. */
export interface McpServerRecord {
  name: string
  url: string
  headers: Record<string, string>
  auth: McpAuth
  enabled: boolean
  updatedAt: string
}

const globs = t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 200 })

/** The tool policy of an org (in its policy's `mcp`) or of a service key (set when the key is created). */
export const McpToolPolicy = t.Object(
  {
    allowedTools: t.Optional(globs),
    deniedTools: t.Optional(globs),
    requestsPerMinute: t.Optional(t.Integer({ minimum: 1 })),
  },
  { additionalProperties: false, title: 'McpToolPolicy' },
)
/** A service key's own: globs only (the rate limit is the org's). */
export const McpKeyPolicy = t.Object({ allowedTools: t.Optional(globs), deniedTools: t.Optional(globs) }, { additionalProperties: false, title: 'McpKeyPolicy' })
export interface ToolPolicy {
  allowedTools?: string[]
  deniedTools?: string[]
  requestsPerMinute?: number
}

const HEADER_NAME = '^[A-Za-z0-9!#$%&\'*+.^_`|~-]{1,64}$'

const AUTH = {
  none: t.Object({ kind: t.Literal('none') }, { additionalProperties: false }),
  bearer: t.Object({ kind: t.Literal('bearer'), token: t.String({ minLength: 1, maxLength: 8192, description: 'write-only: stored encrypted, never shown' }) }, { additionalProperties: false }),
  oauth: t.Object(
    {
      kind: t.Literal('oauth'),
      scope: t.Optional(t.String({ maxLength: 1024 })),
      clientId: t.Optional(t.String({ minLength: 1, maxLength: 512, description: 'a client registered by hand; absent: dynamic client registration' })),
      clientSecret: t.Optional(t.String({ minLength: 1, maxLength: 4096 })),
    },
    { additionalProperties: false },
  ),
}

const serverBody = <A extends TSchema>(auth: A) =>
  t.Object(
    {
      url: t.String({ minLength: 1, maxLength: 2048, description: "the server's Streamable HTTP endpoint, http(s)" }),
      headers: t.Optional(t.Record(t.String({ pattern: HEADER_NAME }), t.String({ maxLength: 8192 }), { description: 'sent on every request to the server; values are stored encrypted and never shown' })),
      auth: t.Optional(auth),
      enabled: t.Optional(t.Boolean()),
    },
    { additionalProperties: false, title: 'McpServerBody' },
  )

export const McpServerBody = serverBody(t.Union([AUTH.none, AUTH.bearer, AUTH.oauth]))
/** Checked against the variant its `auth.kind` names, so a problem is named inside it (`auth.token`). */
const checkers = { none: validator(serverBody(AUTH.none)), bearer: validator(serverBody(AUTH.bearer)), oauth: validator(serverBody(AUTH.oauth)), any: validator(McpServerBody) }
function checkBody(raw: unknown) {
  const kind = (raw as { auth?: { kind?: unknown } } | null)?.auth?.kind
  return kind === 'none' || kind === 'bearer' || kind === 'oauth' ? checkers[kind](raw) : checkers.any(raw)
}

/** Headers gw sets itself on a request to an upstream server. */
const RESERVED = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'accept', 'mcp-session-id', 'mcp-protocol-version'])

/** `PUT /admin/orgs/:org/mcp-servers/:name` (and the config file, the CLI), checked: 400 otherwise. */
export function checkMcpServer(name: string, raw: unknown): Omit<McpServerRecord, 'updatedAt'> {
  if (!MCP_SERVER_NAME.test(name)) throw badRequest(`Invalid MCP server name ${echo(name)}: lowercase letters, digits, "-" and single "_", at most 32`)
  const body = checkBody(raw)
  let url: URL
  try {
    url = new URL(body.url)
  } catch {
    throw fieldError(['url'], `Invalid url ${echo(body.url)}: expected an http(s) URL`, 'expected an http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fieldError(['url'], `Invalid url ${echo(body.url)}: expected an http(s) URL`, 'expected an http(s) URL')
  if (url.username || url.password) throw fieldError(['url'], 'Invalid url: credentials go in auth or headers, not in the URL', 'no credentials in the URL')
  const headers = body.headers ?? {}
  const malformed = Object.keys(headers).find((h) => !new RegExp(HEADER_NAME).test(h))
  if (malformed) throw fieldError(['headers', malformed], `Invalid header name ${echo(malformed)}`, 'not a header name')
  const reserved = Object.keys(headers).find((h) => RESERVED.has(h.toLowerCase()) || (h.toLowerCase() === 'authorization' && body.auth && body.auth.kind !== 'none'))
  if (reserved) throw fieldError(['headers', reserved], `Invalid header ${echo(reserved)}: gw sets it itself`, 'gw sets this header itself')
  const auth: McpAuth = body.auth ?? { kind: 'none' }
  if (auth.kind === 'oauth' && auth.clientSecret && !auth.clientId) throw fieldError(['auth', 'clientSecret'], 'clientSecret needs clientId', 'needs clientId')
  return { name, url: url.href, headers, auth, enabled: body.enabled ?? true }
}

/** The URL as shown: its query's values masked (some servers take a key there). */
function shownUrl(href: string): string {
  const url = new URL(href)
  if (!url.search) return href
  for (const k of new Set(url.searchParams.keys())) url.searchParams.set(k, '****')
  return url.href
}

/** A server as the admin API shows it: header names only, never a header value, bearer token, client secret or query value. */
export function publicMcpServer(s: McpServerRecord) {
  const auth =
    s.auth.kind === 'bearer'
      ? { kind: 'bearer', token: '****' }
      : s.auth.kind === 'oauth'
        ? { kind: 'oauth', scope: s.auth.scope ?? null, clientId: s.auth.clientId ?? null, clientSecret: s.auth.clientSecret ? '****' : null }
        : { kind: 'none' }
  return { name: s.name, url: shownUrl(s.url), headers: Object.keys(s.headers), auth, enabled: s.enabled, updatedAt: s.updatedAt }
}

/** What each sealed MCP value is bound to (its row): a value copied into another row does not decrypt. */
export const mcpSealedFor = {
  server: (orgId: string, name: string) => `mcp_servers/${orgId}/${name}`,
  client: (orgId: string, name: string) => `mcp_servers/${orgId}/${name}/oauth_client`,
  userTokens: (orgId: string, server: string, endUser: string) => `mcp_user_tokens/${orgId}/${server}/${endUser}`,
}
