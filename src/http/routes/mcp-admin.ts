// The MCP servers part of the admin API (PRODUCT §20): PUT/GET/DELETE /admin/orgs/:org/mcp-servers/:name.

import type { AdminService } from '../../admin/admin-service'
import { McpServerBody } from '../../mcp/records'
import { AnyObject, ListOf } from '../../schemas/admin-answers'
import { type OperationCall, operationRoutes, ownOperations } from '../operation-routes'
import { type AdminGuard, guarded, json, readAdminBody } from './admin'

const SERVERS = '/admin/orgs/:org/mcp-servers'

export const MCP_ADMIN_OPERATIONS = ownOperations('admin', [
  { id: 'listMcpServers', method: 'GET', path: SERVERS, summary: "The org's upstream MCP servers (secrets never shown)", answer: ListOf(AnyObject, 'McpServerList') },
  { id: 'getMcpServer', method: 'GET', path: `${SERVERS}/:name`, summary: 'One upstream MCP server (secrets never shown)', answer: AnyObject },
  { id: 'putMcpServer', method: 'PUT', path: `${SERVERS}/:name`, summary: 'Register or replace an upstream MCP server', body: McpServerBody, answer: AnyObject },
  { id: 'deleteMcpServer', method: 'DELETE', path: `${SERVERS}/:name`, summary: 'Remove an upstream MCP server (with the tokens gw held for it)', status: 204 },
  { id: 'listMcpServerUsers', method: 'GET', path: `${SERVERS}/:name/users`, summary: 'The end users gw holds OAuth tokens for at the server (never the tokens)', answer: ListOf(AnyObject, 'McpServerUserList') },
  { id: 'forgetMcpServerUser', method: 'DELETE', path: `${SERVERS}/:name/users/:user`, summary: "Forget one end user's tokens at the server: their next call asks them again", status: 204 },
])

const org = (c: OperationCall) => c.params.org as string
const name = (c: OperationCall) => c.params.name as string

export const mcpAdminRoutes = (admin: AdminService, guard: AdminGuard) =>
  operationRoutes(
    'mcp-admin-routes',
    MCP_ADMIN_OPERATIONS,
    // Behind the role check and the audit log every admin route goes through (docs/architecture.md, "Roles and the audit log").
    guarded(MCP_ADMIN_OPERATIONS, guard, admin, {
      listMcpServers: async (c) => json(c.request, await admin.mcp.list(org(c))),
      getMcpServer: async (c) => json(c.request, await admin.mcp.get(org(c), name(c))),
      putMcpServer: async (c) => json(c.request, await admin.mcp.put(org(c), name(c), await readAdminBody(c.request))),
      deleteMcpServer: async (c) => {
        await admin.mcp.delete(org(c), name(c))
        return json(c.request, null, 204)
      },
      listMcpServerUsers: async (c) => json(c.request, await admin.mcp.users(org(c), name(c))),
      forgetMcpServerUser: async (c) => {
        await admin.mcp.forgetUser(org(c), name(c), c.params.user as string)
        return json(c.request, null, 204)
      },
    }),
  )
