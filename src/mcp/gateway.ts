// The MCP gateway at /mcp (PRODUCT §20): authenticates each request like an API call, keeps the sessions,
// connects to the org's upstream servers and carries each tools/call through policy, rate limit, the call and its record.

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import {
  type CallToolRequest,
  type CallToolResult,
  ErrorCode,
  McpError,
  type ServerNotification,
  type ServerRequest,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js'
import { badRequest, GatewayError } from '../errors'
import { contextFor } from '../http/request-context'
import { authenticate, checkEndpointScope } from '../pipeline/1-auth'
import type { AuthedContext, Deps, OrgContext } from '../pipeline/context'
import { completeAuthorization, OAuthNeeded, UserOAuth } from './oauth'
import { CALLBACK_PATH, type McpServerRecord } from './records'
import { CALL_TIMEOUT_MS, McpSession } from './session'
import { type CallEnd, McpTelemetry, type ToolCall } from './telemetry'
import { splitName, toolRefusal } from './tool-policy'
import { connectUpstream } from './upstream'
import { IDLE_MS, SESSION_LIMITS, SessionRegistry } from './sessions'

/** The longest end-user id (PRODUCT §4). */
const MAX_END_USER = 256

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** The JSON-RPC answer to a request naming a session this instance does not have (the client starts a new one). */
function sessionNotFound(): Response {
  return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }, { status: 404 })
}

const header = (h: Record<string, string | string[] | undefined> | undefined, name: string): string | null => {
  const v = h?.[name]
  return typeof v === 'string' ? v : (v?.[0] ?? null)
}

/** The message of an upstream's JSON-RPC error without the SDK's "MCP error -32602: " prefix. */
const plainMessage = (e: McpError) => e.message.replace(/^MCP error -?\d+: /, '')

export class McpGateway {
  readonly sessions: SessionRegistry
  private readonly cache = new Map<string, { org: OrgContext; servers: Promise<McpServerRecord[]> }>()
  private readonly sweeper: ReturnType<typeof setInterval>
  /** Each OAuth client's provider, to read the URL a refused refresh left. */
  private readonly oauthOf = new WeakMap<Client, UserOAuth>()

  /** `telemetry` is made with the routes, so /metrics shows the MCP families before the first call. */
  constructor(
    private readonly deps: Deps,
    private readonly telemetry: McpTelemetry,
  ) {
    this.sessions = new SessionRegistry(deps.inFlight)
    this.sweeper = setInterval(() => void this.sessions.closeIdle(Date.now() - IDLE_MS), 60_000)
    this.sweeper.unref?.()
  }

  /** POST/GET/DELETE /mcp: one request of the Streamable HTTP transport, after its credential is checked (401 without one). */
  async handle(request: Request): Promise<Response> {
    const { identity, org } = await authenticate(this.deps, request.headers)
    // A service key scoped to other endpoints may not use the gateway (PRODUCT §18).
    checkEndpointScope({ identity, endpoint: '/mcp' })
    const id = request.headers.get('mcp-session-id')
    if (id !== null) {
      const s = this.sessions.get(id)
      const who = s?.owner.ctx.identity
      // Another caller's session is as unknown as one that never was; so is another end user's, when a
      // signed token names the caller's (the session acts with its end user's OAuth grants).
      if (!s || !who || who.orgId !== identity.orgId || who.subject !== identity.subject) return sessionNotFound()
      if (identity.endUserId !== undefined && identity.endUserId !== s.owner.endUserId) return sessionNotFound()
      s.lastUsed = Date.now()
      s.owner.ctx = { ...s.owner.ctx, org }
      return s.transport.handleRequest(request)
    }
    if (this.sessions.size >= SESSION_LIMITS.total) throw new GatewayError(503, 'gateway_error', 'Too many MCP sessions open on this instance; try again shortly', { headers: { 'retry-after': '5' } })
    const endUserId = identity.endUserId ?? request.headers.get('x-gw-end-user-id')
    if (endUserId !== null && endUserId.length > MAX_END_USER) throw badRequest(`x-gw-end-user-id is longer than ${MAX_END_USER} characters`)
    const ctx: AuthedContext = { ...contextFor(request, '/mcp'), identity, org }
    const keyPolicy = identity.authMode === 'GwKey' ? await this.deps.store.mcp.getKeyPolicy(identity.subject) : undefined
    const session = new McpSession(this, { ctx, endUserId, keyPolicy, base: this.deps.config.publicUrl ?? new URL(request.url).origin }, this.deps.config.maxBodyBytes)
    try {
      await session.server.connect(session.transport)
      return await session.transport.handleRequest(request)
    } finally {
      // Only an initialize opens a session; anything else was answered (400) and leaves nothing behind.
      if (!session.transport.sessionId) await session.close()
    }
  }

  /** GET /mcp/oauth/callback: the end of a user's authorisation; a page saying it worked, or the error. */
  async callback(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const base = this.deps.config.publicUrl ?? url.origin
    const done = await completeAuthorization(this.deps.store.mcp, url.searchParams, `${base}${CALLBACK_PATH}`, this.deps.fetch)
    // The user's open sessions on this instance list the server's tools from now on: their clients are told.
    this.sessions.toolsChangedFor(done.orgId, done.endUser)
    const page = `<!doctype html><meta charset="utf-8"><title>gw</title><p>gw may now use the MCP server <b>${escapeHtml(done.server)}</b> for you. You can close this tab and go back to your agent.</p>`
    return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } })
  }

  /**
   * The org's enabled servers, read again whenever the org's context is (`org`, from the org directory): at
   * once after an admin change on this instance or a change notice, else within its 2 s.
   */
  servers(org: OrgContext): Promise<McpServerRecord[]> {
    const orgId = org.org.id
    const hit = this.cache.get(orgId)
    if (hit && hit.org === org) return hit.servers
    const servers = this.deps.store.mcp.getServers(orgId).then((all) => all.filter((s) => s.enabled))
    if (this.cache.size > 10_000) this.cache.clear()
    this.cache.set(orgId, { org, servers })
    servers.catch(() => this.cache.get(orgId)?.servers === servers && this.cache.delete(orgId))
    return servers
  }

  /** A new connection of `session` to `server`; an OAuth server uses the session's end user's tokens. */
  async connect(session: McpSession, server: McpServerRecord): Promise<Client> {
    if (server.auth.kind !== 'oauth') return connectUpstream(server, { fetch: this.deps.fetch })
    const user = session.owner.endUserId
    if (user === null)
      throw new McpError(ErrorCode.InvalidRequest, `The MCP server "${server.name}" acts for each end user: send x-gw-end-user-id on the MCP requests, or use a signed token with an endUserId claim`)
    const oauth = new UserOAuth(this.deps.store.mcp, session.owner.ctx.identity.orgId, server, user, `${session.owner.base}${CALLBACK_PATH}`)
    try {
      const client = await connectUpstream(server, { fetch: this.deps.fetch, oauth })
      this.oauthOf.set(client, oauth)
      return client
    } catch (err) {
      if (err instanceof UnauthorizedError && oauth.authorizationUrl) throw new OAuthNeeded(server.name, oauth.authorizationUrl)
      // No registration endpoint and no client registered by hand: only the operator can fix it.
      if (err instanceof Error && /does not support dynamic client registration/.test(err.message))
        throw new McpError(
          ErrorCode.InvalidRequest,
          `The MCP server "${server.name}"'s authorization server does not offer dynamic client registration: an admin must register gw there and set auth.clientId (and clientSecret) on the server`,
        )
      throw err
    }
  }

  /** tools/call: the policy, the org's tool-call rate, the upstream call (its progress passed on), and its record. */
  async callTool(session: McpSession, params: CallToolRequest['params'], extra: Extra): Promise<CallToolResult> {
    const split = splitName(params.name)
    const call: ToolCall = {
      ctx: McpTelemetry.context(session.owner.ctx, params.arguments, extra.signal),
      server: split?.[0] ?? '',
      tool: split?.[1] ?? params.name,
      arguments: params.arguments,
      callId: String(extra.requestId),
      traceparent: header(extra.requestInfo?.headers, 'traceparent'),
    }
    // Each call's answer waits for room in a full log queue, as an API request's does.
    const fail = async (end: CallEnd, error: McpError): Promise<never> => {
      await this.telemetry.finish(call, end).room
      throw error
    }
    const server = split && (await session.servers()).find((s) => s.name === split[0])
    if (!server) return fail({ status: 'unknown_tool', message: 'unknown tool' }, new McpError(ErrorCode.InvalidParams, `Unknown tool "${params.name.slice(0, 64)}": names are <server>__<tool>`))
    const refusal = toolRefusal(params.name, session.policies())
    if (refusal) return fail({ status: 'denied', message: refusal }, new McpError(ErrorCode.InvalidParams, `Tool call refused: ${refusal}`))
    const rpm = session.owner.ctx.org.org.policy.mcp?.requestsPerMinute
    if (rpm !== undefined) {
      const admission = await this.deps.limiter.admit([{ key: `mcp:${session.owner.ctx.identity.orgId}:rpm`, limit: rpm, cost: 1 }])
      if (!admission.ok) {
        const message = `Rate limit exceeded for the MCP tool calls of org "${session.owner.ctx.identity.orgId}": ${rpm} per minute; retry in ${admission.retryAfterSeconds} s`
        return fail({ status: 'rate_limited', message }, new McpError(ErrorCode.InternalError, message, { code: 'rate_limit_exceeded', retryAfterSeconds: admission.retryAfterSeconds }))
      }
    }
    let client: Client
    try {
      client = await session.client(server)
    } catch (err) {
      return fail(...this.connectFailure(server, err))
    }
    const token = params._meta?.progressToken
    const t0 = performance.now()
    try {
      const answered = (await client.callTool({ name: call.tool, arguments: params.arguments }, undefined, {
        signal: extra.signal,
        timeout: CALL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
        ...(token === undefined
          ? {}
          : { onprogress: (p) => void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } }).catch(() => {}) }),
      })) as CallToolResult
      // Never the server's own secrets back to the caller, whatever the server echoes (a tool error often does).
      const result = (cleanData(redactor(server), answered) ?? answered) as CallToolResult
      const { entry, room } = this.telemetry.finish(call, { status: result.isError ? 'tool_error' : 'ok', result, upstreamLatencyMs: Math.round(performance.now() - t0) })
      await room
      return { ...result, _meta: { ...result._meta, 'gw/requestId': entry.requestId } }
    } catch (err) {
      const upstreamLatencyMs = Math.round(performance.now() - t0)
      if (extra.signal.aborted) return fail({ status: 'cancelled', message: 'the client cancelled the call', upstreamLatencyMs }, new McpError(ErrorCode.RequestTimeout, 'Cancelled'))
      const oauth = this.oauthOf.get(client)
      if (err instanceof UnauthorizedError && oauth?.authorizationUrl) return fail(...this.connectFailure(server, new OAuthNeeded(server.name, oauth.authorizationUrl)))
      if (err instanceof McpError) {
        // The server's own error, passed on without the secrets gw sent it (a server may echo its headers).
        const message = redacted(server, plainMessage(err))
        return fail({ status: 'upstream_error', message, upstreamLatencyMs }, new McpError(err.code, message, cleanData(redactor(server), err.data)))
      }
      const message = `The MCP server "${server.name}" failed the call: ${safeMessage(server, err)}`
      return fail({ status: 'unreachable', message, upstreamLatencyMs }, new McpError(ErrorCode.InternalError, message))
    }
  }

  /** What a failed connection means for the call: authorisation needed (the URL to visit), a refusal, or a server out of reach. */
  private connectFailure(server: McpServerRecord, err: unknown): [CallEnd, McpError] {
    if (err instanceof OAuthNeeded)
      return [
        { status: 'unauthorized', message: 'the end user has not authorised gw for this server yet' },
        new UrlElicitationRequiredError([{ mode: 'url', url: err.url, elicitationId: crypto.randomUUID(), message: err.message }], err.message),
      ]
    if (err instanceof McpError && err.code === ErrorCode.InvalidRequest) {
      const message = redacted(server, plainMessage(err))
      return [{ status: 'unauthorized', message }, new McpError(err.code, message)]
    }
    const message = `The MCP server "${server.name}" is out of reach: ${safeMessage(server, err)}`
    return [{ status: 'unreachable', message }, new McpError(ErrorCode.InternalError, message)]
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper)
    await this.sessions.closeIdle()
  }
}

/**
 * An upstream failure's message for the caller and the log: without the server's query string (some servers
 * take a key there), its header values or bearer secret, and at most 200 characters.
 */
export function safeMessage(server: McpServerRecord, err: unknown): string {
  return redacted(server, err instanceof Error ? err.message : 'error').slice(0, 200)
}

/** A text without the server's secrets. */
function redacted(server: McpServerRecord, text: string): string {
  return redactor(server)?.(text) ?? text
}

/** Takes the server's secrets (its headers' values, its bearer token, its URL's query) out of a text; undefined when it has none. */
function redactor(server: McpServerRecord): ((text: string) => string) | undefined {
  const url = new URL(server.url)
  const secrets = [...Object.values(server.headers), ...(server.auth.kind === 'bearer' ? [server.auth.token] : []), ...(url.search ? [url.search.slice(1)] : [])].filter(
    (s) => s.length >= 4,
  )
  if (!secrets.length) return undefined
  return (text) => {
    for (const secret of secrets) text = text.split(secret).join('[redacted]')
    return text
  }
}

/** A value as JSON with the secrets taken out (the value itself when there are none); undefined when that is no longer JSON. */
function cleanData(clean: ((text: string) => string) | undefined, data: unknown): unknown {
  if (data === undefined || !clean) return data
  try {
    return JSON.parse(clean(JSON.stringify(data)))
  } catch {
    return undefined
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
