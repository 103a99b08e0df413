// One MCP client session at /mcp (PRODUCT §20): the SDK's server side facing the client, aggregating the
// org's upstream servers (tools and prompts as `<server>__<name>`, resources by URI) over one SDK client each.

import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  McpError,
  type Prompt,
  ReadResourceRequestSchema,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import type { AuthedContext } from '../pipeline/context'
import type { McpGateway } from './gateway'
import { OAuthNeeded } from './oauth'
import type { McpServerRecord, ToolPolicy } from './records'
import { SEP, splitName, toolRefusal } from './tool-policy'
import { GW_CLIENT_INFO, LIST_TIMEOUT_MS } from './upstream'

/** Who a session belongs to: every request of it must come with the same credential's identity. */
export interface SessionOwner {
  /** The authenticated context of the request that opened the session (identity, org, end user, headers). */
  ctx: AuthedContext
  /** The end user of §4's precedence (a signed-token claim, else x-gw-end-user-id), or null. */
  endUserId: string | null
  /** The service key's own tool policy, when it has one. */
  keyPolicy: ToolPolicy | undefined
  /** gw's address as the user's browser reaches it (GW_PUBLIC_URL, else the one the client connected to), for OAuth callbacks. */
  base: string
}

/** Most pages of a listing read from one upstream server. */
const MAX_PAGES = 20
/** How long a tool call may run without progress. */
export const CALL_TIMEOUT_MS = 300_000

interface Link {
  updatedAt: string
  client: Promise<Client>
}

export class McpSession {
  readonly transport: WebStandardStreamableHTTPServerTransport
  readonly server: Server
  lastUsed = Date.now()
  private readonly links = new Map<string, Link>()
  /** Which server each listed resource URI came from. */
  private readonly resourceServer = new Map<string, string>()
  private closed = false

  constructor(
    private readonly gw: McpGateway,
    readonly owner: SessionOwner,
    maxBodyBytes: number,
  ) {
    this.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (id) => gw.sessions.add(id, this),
      onsessionclosed: () => void this.close(),
      maxRequestBodySize: maxBodyBytes,
    })
    this.server = new Server(
      { ...GW_CLIENT_INFO, title: 'gw MCP gateway' },
      { capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } }, instructions: 'Tools of this org’s MCP servers, named <server>__<tool>.' },
    )
    const s = this.server
    s.setRequestHandler(ListToolsRequestSchema, () => this.listTools())
    s.setRequestHandler(CallToolRequestSchema, (req, extra) => gw.callTool(this, req.params, extra))
    s.setRequestHandler(ListPromptsRequestSchema, async () => ({
      prompts: await this.gather((c, cursor) => c.listPrompts(cursor ? { cursor } : {}, { timeout: LIST_TIMEOUT_MS }).then((r) => [r.prompts, r.nextCursor] as const), (srv, p: Prompt) => ({ ...p, name: `${srv.name}${SEP}${p.name}` })),
    }))
    s.setRequestHandler(GetPromptRequestSchema, async (req) => {
      const [srv, name] = await this.routeName(req.params.name, 'prompt')
      return (await this.client(srv)).getPrompt({ ...req.params, name }, { timeout: LIST_TIMEOUT_MS })
    })
    s.setRequestHandler(ListResourcesRequestSchema, async () => ({
      resources: await this.gather((c, cursor) => c.listResources(cursor ? { cursor } : {}, { timeout: LIST_TIMEOUT_MS }).then((r) => [r.resources, r.nextCursor] as const), (srv, r: Resource) => {
        this.resourceServer.set(r.uri, srv.name)
        return r
      }),
    }))
    s.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
      resourceTemplates: await this.gather(
        (c, cursor) => c.listResourceTemplates(cursor ? { cursor } : {}, { timeout: LIST_TIMEOUT_MS }).then((r) => [r.resourceTemplates, r.nextCursor] as const),
        (_srv, t: ResourceTemplate) => t,
      ),
    }))
    s.setRequestHandler(ReadResourceRequestSchema, (req) => this.readResource(req.params.uri))
  }

  /** The org's enabled servers, as fresh as the org context of the session's latest request. */
  servers(): Promise<McpServerRecord[]> {
    return this.gw.servers(this.owner.ctx.org)
  }

  /** The connected client of `server`, made on first use and again when the server's record changes. */
  client(server: McpServerRecord): Promise<Client> {
    const known = this.links.get(server.name)
    if (known && known.updatedAt === server.updatedAt) return known.client
    if (known) void known.client.then(endUpstream).catch(() => {})
    const client = this.gw.connect(this, server).then((c) => this.relayListChanges(c))
    const link = { updatedAt: server.updatedAt, client }
    this.links.set(server.name, link)
    // A failed connection is not kept: the next use tries again (a server down now may be up then).
    client.catch(() => {
      if (this.links.get(server.name) === link) this.links.delete(server.name)
    })
    return client
  }

  /** An upstream's tools, prompts or resources changed: so did the union this session's client sees. */
  private relayListChanges(c: Client): Client {
    const relay = (send: () => Promise<void>) => () => void send().catch(() => {})
    c.setNotificationHandler(ToolListChangedNotificationSchema, relay(() => this.server.sendToolListChanged()))
    c.setNotificationHandler(PromptListChangedNotificationSchema, relay(() => this.server.sendPromptListChanged()))
    c.setNotificationHandler(ResourceListChangedNotificationSchema, relay(() => this.server.sendResourceListChanged()))
    return c
  }

  /** `<server>__<name>` → the enabled server and the upstream name; an unknown one is the JSON-RPC invalid-params error. */
  async routeName(full: string, what: string): Promise<[McpServerRecord, string]> {
    const split = splitName(full)
    const srv = split && (await this.servers()).find((s) => s.name === split[0])
    if (!split || !srv) throw new McpError(ErrorCode.InvalidParams, `Unknown ${what} "${full.slice(0, 64)}": names are <server>${SEP}<${what}>`)
    return [srv, split[1]]
  }

  /** The policies a tool name is checked against: the org's, then the service key's. */
  policies(): (ToolPolicy | undefined)[] {
    return [this.owner.ctx.org.org.policy.mcp, this.owner.keyPolicy]
  }

  private async listTools(): Promise<{ tools: Tool[] }> {
    const policies = this.policies()
    const tools = await this.gather(
      (c, cursor) => c.listTools(cursor ? { cursor } : {}, { timeout: LIST_TIMEOUT_MS }).then((r) => [r.tools, r.nextCursor] as const),
      (srv, t: Tool) => ({ ...t, name: `${srv.name}${SEP}${t.name}` }),
      (srv, err) => (err instanceof OAuthNeeded ? [authorizeTool(srv)] : []),
    )
    return { tools: tools.filter((t) => !toolRefusal(t.name, policies)) }
  }

  /**
   * Every enabled server's items, each server's pages read in turn, the servers at once; a server that
   * fails (down, slow, refusing) adds `failed(server, err)` (nothing by default) and the others still answer.
   */
  private async gather<T, U>(
    page: (c: Client, cursor: string | undefined) => Promise<readonly [T[], string | undefined]>,
    map: (srv: McpServerRecord, item: T) => U,
    failed: (srv: McpServerRecord, err: unknown) => U[] = () => [],
  ): Promise<U[]> {
    const servers = await this.servers()
    const lists = await Promise.all(
      servers.map(async (srv) => {
        try {
          const c = await this.client(srv)
          const out: U[] = []
          let cursor: string | undefined
          for (let i = 0; i < MAX_PAGES; i++) {
            const [items, next] = await page(c, cursor)
            for (const it of items) out.push(map(srv, it))
            if (!next) break
            cursor = next
          }
          return out
        } catch (err) {
          if (isMethodNotFound(err)) return []
          return failed(srv, err)
        }
      }),
    )
    return lists.flat()
  }

  private async readResource(uri: string) {
    const servers = await this.servers()
    const known = servers.find((s) => s.name === this.resourceServer.get(uri))
    // A URI not listed yet (a template's): each server in turn, the first that has it answers.
    const order = known ? [known] : servers
    let last: unknown
    for (const srv of order) {
      try {
        return await (await this.client(srv)).readResource({ uri }, { timeout: LIST_TIMEOUT_MS })
      } catch (err) {
        last = err
      }
    }
    if (last instanceof McpError) throw last
    throw new McpError(ErrorCode.InvalidParams, `Resource not found: ${uri.slice(0, 64)}`)
  }

  /** Ends the session now (shutdown): its streams close, its upstream sessions end. */
  readonly end = (): void => void this.close()

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.gw.sessions.remove(this)
    const links = [...this.links.values()]
    this.links.clear()
    await Promise.allSettled(links.map(async (l) => endUpstream(await l.client)))
    await this.server.close().catch(() => {})
  }
}

/** Ends the upstream session (DELETE, so the server can let it go), then the connection. */
async function endUpstream(c: Client): Promise<void> {
  try {
    await (c.transport as StreamableHTTPClientTransport | undefined)?.terminateSession()
  } finally {
    await c.close()
  }
}

function isMethodNotFound(err: unknown): boolean {
  return err instanceof McpError && err.code === ErrorCode.MethodNotFound
}

/** What tools/list shows of an OAuth server the end user has not authorised gw for yet: one tool that says how. */
function authorizeTool(srv: McpServerRecord): Tool {
  return {
    name: `${srv.name}${SEP}authorize`,
    description: `Authorise gw to use the MCP server "${srv.name}" on your behalf. Calling it (or any ${srv.name}${SEP}* tool) answers with the URL to open; its tools are listed once you have.`,
    inputSchema: { type: 'object', properties: {} },
  }
}
