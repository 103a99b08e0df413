// The MCP part of the Store (PRODUCT §20), run against SQLite (a database file) and PostgreSQL when reachable:
// servers, OAuth clients and users' tokens round-trip and are sealed at rest, a new URL or a deletion drops
// what gw held for the old server, and a sealed value moved to another row does not open.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Store } from '../../src/store/types'
import { serversFor } from '../helpers/servers'
import { postgresSubject, sqliteSubject, type StoreSubject } from '../helpers/store-subjects'

const SECRETS = ['bearer-SECRET-0001', 'header-SECRET-0002', 'client-SECRET-0003', 'access-SECRET-0004', 'refresh-SECRET-0005']

type Subject = StoreSubject
const SECRET = 'a-secret-for-the-mcp-store-test-0123'
const makers: Record<'sqlite' | 'postgres', () => Promise<Subject>> = {
  sqlite: () => sqliteSubject(SECRET, true),
  postgres: () => postgresSubject(SECRET),
}

const pgUp = await serversFor('MCP store on PostgreSQL', { postgres: true })

for (const kind of ['sqlite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !pgUp)(`${kind} store`, () => {
    let s: Subject
    let store: Store
    beforeAll(async () => {
      s = await makers[kind]()
      store = s.store
      await store.orgs.createOrg({ id: 'o1', name: 'One' })
    })
    afterAll(() => s.done())

    test('servers, the OAuth client and each user\'s tokens round-trip, sealed at rest', async () => {
      await store.mcp.putServer('o1', { name: 'crm', url: 'https://crm.example/mcp', headers: { 'x-team': SECRETS[1] as string }, auth: { kind: 'bearer', token: SECRETS[0] as string }, enabled: true })
      await store.mcp.putOAuthClient('o1', 'crm', JSON.stringify({ client_id: 'c1', client_secret: SECRETS[2] }))
      await store.mcp.putUserTokens('o1', 'crm', 'alice', JSON.stringify({ tokens: { access_token: SECRETS[3], refresh_token: SECRETS[4] } }))
      await store.mcp.putUserTokens('o1', 'crm', 'bob', '{"tokens":{"access_token":"bob-token"}}')
      const [crm] = await store.mcp.getServers('o1')
      expect(crm).toMatchObject({ name: 'crm', url: 'https://crm.example/mcp', headers: { 'x-team': SECRETS[1] }, auth: { kind: 'bearer', token: SECRETS[0] }, enabled: true })
      expect(JSON.parse((await store.mcp.getOAuthClient('o1', 'crm')) ?? '{}')).toEqual({ client_id: 'c1', client_secret: SECRETS[2] })
      expect(await store.mcp.getUserTokens('o1', 'crm', 'alice')).toContain(SECRETS[3])
      expect(await store.mcp.getUserTokens('o1', 'crm', 'bob')).toContain('bob-token')
      expect(await store.mcp.getUserTokens('o1', 'crm', 'carol')).toBeUndefined()
      const rows = JSON.stringify([...(await s.raw('mcp_servers')), ...(await s.raw('mcp_user_tokens'))])
      for (const secret of SECRETS) expect(rows).not.toContain(secret)
      expect(rows).toContain('v2:')
    })

    test('a sealed value moved to another user\'s row does not open', async () => {
      await s.exec("UPDATE mcp_user_tokens SET tokens_enc = (SELECT tokens_enc FROM mcp_user_tokens WHERE end_user = 'alice') WHERE end_user = 'bob'")
      await expect(store.mcp.getUserTokens('o1', 'crm', 'bob')).rejects.toThrow(/cannot decrypt/)
      await store.mcp.deleteUserTokens('o1', 'crm', 'bob')
      expect(await store.mcp.getUserTokens('o1', 'crm', 'bob')).toBeUndefined()
    })

    test("a new URL drops the OAuth client and the users' tokens; deleting the server drops them too", async () => {
      await store.mcp.putServer('o1', { name: 'crm', url: 'https://crm.example/mcp', headers: {}, auth: { kind: 'oauth' }, enabled: true })
      expect(await store.mcp.getUserTokens('o1', 'crm', 'alice')).toBeDefined()
      await store.mcp.putServer('o1', { name: 'crm', url: 'https://other.example/mcp', headers: {}, auth: { kind: 'oauth' }, enabled: true })
      expect(await store.mcp.getOAuthClient('o1', 'crm')).toBeUndefined()
      expect(await store.mcp.getUserTokens('o1', 'crm', 'alice')).toBeUndefined()
      await store.mcp.putUserTokens('o1', 'crm', 'alice', '{}')
      expect(await store.mcp.deleteServer('o1', 'crm')).toBe(true)
      expect(await store.mcp.deleteServer('o1', 'crm')).toBe(false)
      expect(await s.raw('mcp_user_tokens')).toEqual([])
    })

    test("a service key's tool policy round-trips", async () => {
      await store.keys.createServiceKey({ id: 'k1', orgId: 'o1', name: undefined, hash: new Uint8Array(32) })
      await store.mcp.putKeyPolicy('o1', 'k1', { allowedTools: ['a__*'], deniedTools: ['a__x'] })
      expect(await store.mcp.getKeyPolicy('k1')).toEqual({ allowedTools: ['a__*'], deniedTools: ['a__x'] })
      expect(await store.mcp.getKeyPolicy('k2')).toBeUndefined()
    })
  })
}
