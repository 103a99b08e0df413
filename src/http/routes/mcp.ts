// The MCP gateway's routes (PRODUCT §20): POST/GET/DELETE /mcp (Streamable HTTP) and the OAuth callback.

import { Elysia } from 'elysia'
import type { McpGateway } from '../../mcp/gateway'
import { CALLBACK_PATH } from '../../mcp/records'
import { McpTelemetry } from '../../mcp/telemetry'
import type { Deps } from '../../pipeline/context'
import { ownOperations } from '../operation-routes'
import { AnyObject } from '../../schemas/admin-answers'

export const MCP_OPERATIONS = [
  ...ownOperations('client', [
    { id: 'mcpPost', method: 'POST', path: '/mcp', summary: "MCP Streamable HTTP: a JSON-RPC message to gw's MCP gateway (tools of the org's MCP servers as <server>__<tool>)", body: AnyObject, streams: true },
    { id: 'mcpStream', method: 'GET', path: '/mcp', summary: "MCP Streamable HTTP: the session's server-sent events", streams: true },
    { id: 'mcpEnd', method: 'DELETE', path: '/mcp', summary: 'MCP Streamable HTTP: ends the session' },
  ]),
  ...ownOperations('public', [{ id: 'mcpOAuthCallback', method: 'GET', path: CALLBACK_PATH, summary: "Where an end user's browser comes back after authorising gw for an MCP server" }]),
]

/**
 * The body is read by the transport, only after the credential is checked. The gateway (and the MCP
 * SDK under it) is loaded on the first MCP request, so a gw that serves none, and every CLI command,
 * starts without it; its metric families are registered at once.
 */
export function mcpRoutes(deps: Deps) {
  const telemetry = new McpTelemetry(deps)
  let gateway: Promise<McpGateway> | undefined
  const loaded = () => (gateway ??= import('../../mcp/gateway').then((m) => new m.McpGateway(deps, telemetry)))
  const handle = async ({ request }: { request: Request }) => (await loaded()).handle(request)
  return new Elysia({ name: 'mcp-routes' })
    .post('/mcp', handle, { parse: 'none' })
    .get('/mcp', handle)
    .delete('/mcp', handle, { parse: 'none' })
    .get(CALLBACK_PATH, async ({ request }) => (await loaded()).callback(request))
}
