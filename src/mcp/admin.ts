// Admin operations on an org's MCP servers (PRODUCT §20), shared by the HTTP admin API, the CLI and the config file.

import { notFound, echo } from '../errors'
import type { Store } from '../store/types'
import { checkMcpServer, publicMcpServer } from './records'

export class McpAdmin {
  constructor(
    private readonly store: Store,
    private readonly requireOrg: (orgId: string) => Promise<unknown>,
    /** Called after every change, so the gateway's caches drop the org. */
    private readonly changed: (orgId: string) => void,
  ) {}

  /** PUT /admin/orgs/:org/mcp-servers/:name: creates or replaces a server (its secrets write-only). */
  async put(orgId: string, name: string, raw: unknown) {
    await this.requireOrg(orgId)
    const rec = await this.store.mcp.putServer(orgId, checkMcpServer(name, raw))
    this.changed(orgId)
    return publicMcpServer(rec)
  }

  async list(orgId: string) {
    await this.requireOrg(orgId)
    return { data: (await this.store.mcp.getServers(orgId)).map(publicMcpServer) }
  }

  async get(orgId: string, name: string) {
    await this.requireOrg(orgId)
    const rec = (await this.store.mcp.getServers(orgId)).find((s) => s.name === name)
    if (!rec) throw notFound(`No MCP server ${echo(name)} in org "${orgId}"`)
    return publicMcpServer(rec)
  }

  async delete(orgId: string, name: string): Promise<void> {
    await this.requireOrg(orgId)
    if (!(await this.store.mcp.deleteServer(orgId, name))) throw notFound(`No MCP server ${echo(name)} in org "${orgId}"`)
    this.changed(orgId)
  }
}
