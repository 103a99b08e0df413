// The storage of the MCP gateway (PRODUCT §20): servers, OAuth clients, each end user's tokens, service keys' tool policies.

import type { McpServerRecord, ToolPolicy } from './records'

/** Every value that may hold a secret arrives and leaves in clear; the store seals it at rest. */
export interface McpStore {
  /** Creates or replaces a server; a new URL drops the OAuth client and tokens gw held for the old one. */
  putServer(orgId: string, rec: Omit<McpServerRecord, 'updatedAt'>): Promise<McpServerRecord>
  /** The org's servers, by name. */
  getServers(orgId: string): Promise<McpServerRecord[]>
  /** Returns false when the org has no such server; its OAuth client and users' tokens go with it. */
  deleteServer(orgId: string, name: string): Promise<boolean>
  /** The OAuth client gw registered with a server's authorization server (JSON text), when it has one. */
  getOAuthClient(orgId: string, server: string): Promise<string | undefined>
  putOAuthClient(orgId: string, server: string, json: string): Promise<void>
  /** One end user's OAuth tokens for a server (JSON text). */
  getUserTokens(orgId: string, server: string, endUser: string): Promise<string | undefined>
  putUserTokens(orgId: string, server: string, endUser: string, json: string): Promise<void>
  /** Returns false when gw held nothing for that user. */
  deleteUserTokens(orgId: string, server: string, endUser: string): Promise<boolean>
  /** The end users gw holds a grant (or an authorisation under way) for, by id. */
  listUserGrants(orgId: string, server: string): Promise<{ endUser: string; updatedAt: string }[]>
  /** A service key's own tool policy (set when the key is created). */
  putKeyPolicy(orgId: string, keyId: string, policy: ToolPolicy): Promise<void>
  getKeyPolicy(keyId: string): Promise<ToolPolicy | undefined>
}
