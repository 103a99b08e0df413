// Admin operations on an org's MCP servers (PRODUCT §20), shared by the HTTP admin API, the CLI and the config file.

import { notFound, echo } from '../errors'
import type { Store } from '../store/types'
import type { AuditLog } from '../admin/audit'
import { checkMcpServer, publicMcpServer } from './records'

export class McpAdmin {
  constructor(
    private readonly store: Store,
    private readonly requireOrg: (orgId: string) => Promise<unknown>,
    /** Called after every change, so the gateway's caches drop the org. */
    private readonly changed: (orgId: string) => void,
    private readonly audit: AuditLog,
  ) {}

  private async current(orgId: string, name: string) {
    const rec = (await this.store.mcp.getServers(orgId)).find((s) => s.name === name)
    return rec ? publicMcpServer(rec) : null
  }

  /** PUT /admin/orgs/:org/mcp-servers/:name: creates or replaces a server (its secrets write-only). */
  async put(orgId: string, name: string, raw: unknown) {
    await this.requireOrg(orgId)
    const checked = checkMcpServer(name, raw)
    const before = await this.current(orgId, name)
    const rec = await this.store.mcp.putServer(orgId, checked)
    this.changed(orgId)
    const after = publicMcpServer(rec)
    await this.audit.record({ action: 'mcp-server.set', org: orgId, target: `mcp-server:${name}`, before, after })
    return after
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

  /** The end users gw holds tokens for at an OAuth server (never the tokens), and those with an authorisation under way. */
  async users(orgId: string, name: string) {
    await this.get(orgId, name)
    const grants = await this.store.mcp.listUserGrants(orgId, name)
    const data = []
    for (const g of grants) {
      const json = await this.store.mcp.getUserTokens(orgId, name, g.endUser)
      const grant = json ? (JSON.parse(json) as { tokens?: unknown }) : {}
      data.push({ endUser: g.endUser, authorised: grant.tokens !== undefined, updatedAt: g.updatedAt })
    }
    return { data }
  }

  /** Forgets one end user's tokens at a server (offboarding, a grant to withdraw): their next call asks them again. */
  async forgetUser(orgId: string, name: string, endUser: string): Promise<void> {
    await this.get(orgId, name)
    if (!(await this.store.mcp.deleteUserTokens(orgId, name, endUser))) throw notFound(`gw holds nothing for ${echo(endUser)} at the MCP server "${name}"`)
    await this.audit.record({ action: 'mcp-server.forget-user', org: orgId, target: `mcp-server:${name}/user:${endUser}`, before: { endUser }, after: null })
  }

  async delete(orgId: string, name: string): Promise<void> {
    await this.requireOrg(orgId)
    const before = await this.current(orgId, name)
    if (!(await this.store.mcp.deleteServer(orgId, name))) throw notFound(`No MCP server ${echo(name)} in org "${orgId}"`)
    this.changed(orgId)
    await this.audit.record({ action: 'mcp-server.delete', org: orgId, target: `mcp-server:${name}`, before, after: null })
  }
}
