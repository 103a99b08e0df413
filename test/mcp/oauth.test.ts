// Per-user OAuth to an upstream MCP server (PRODUCT §20) against a fake authorization server that checks
// PKCE: the URL to visit before consent, success after, each user's own token upstream, refresh on expiry,
// another user still asked, the end user of §4's precedence, and the caller's gw credential never upstream.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { auth } from '@modelcontextprotocol/sdk/client/auth.js'
import { AdminService } from '../../src/admin/admin-service'
import { UserOAuth } from '../../src/mcp/oauth'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { type FakeAuthServer, startAuthServer } from '../fakes/oauth-server'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let as: FakeAuthServer
let crm: FakeMcpServer

beforeAll(async () => {
  as = startAuthServer()
  crm = await startMcpServer({
    oauth: {
      authorizationServer: as.url,
      verify: (token) => {
        const t = as.verify(token)
        return t ? { token, clientId: t.clientId, scopes: [], extra: { user: t.user } } : undefined
      },
    },
    build: (s) =>
      s.registerTool('whoami', { description: 'The user the token stands for' }, async (extra) => ({
        content: [{ type: 'text', text: String(extra.authInfo?.extra?.user) }],
      })),
  })
  gw = await startTestGateway()
  expect((await gw.admin('PUT', '/orgs/default/mcp-servers/crm', { url: crm.url, auth: { kind: 'oauth' } })).status).toBe(200)
})
afterAll(async () => {
  await gw.stop()
  await crm.stop()
  as.stop()
})

async function connect(headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'agent', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers } }))
  return client
}
const asUser = (user: string) => connect({ authorization: `Bearer ${gw.key}`, 'x-gw-end-user-id': user })

const whoami = async (c: Client) => ((await c.callTool({ name: 'crm__whoami', arguments: {} })).content as { text: string }[])[0]?.text

/** The JSON-RPC error a call before authorisation gets, and the URL it carries. */
async function needsAuthorisation(c: Client): Promise<URL> {
  const err = await c.callTool({ name: 'crm__whoami', arguments: {} }).then(
    () => undefined,
    (e: unknown) => e as McpError,
  )
  expect(err).toBeInstanceOf(McpError)
  expect(err?.code).toBe(-32042)
  const elicitation = (err?.data as { elicitations: { mode: string; url: string; message: string }[] }).elicitations[0]
  expect(elicitation?.mode).toBe('url')
  expect(err?.message).toContain(elicitation?.url as string)
  return new URL(elicitation?.url as string)
}

/** The user opens the URL, signs in at the authorization server and consents; the browser comes back to gw. */
async function consent(url: URL, user: string): Promise<Response> {
  const back = await fetch(url, { headers: { 'x-test-user': user }, redirect: 'manual' })
  expect(back.status).toBe(302)
  const location = back.headers.get('location') as string
  expect(location.startsWith(`${gw.url}/mcp/oauth/callback?`)).toBe(true)
  return fetch(location)
}

const stateOf = (url: URL) => JSON.parse(Buffer.from(url.searchParams.get('state') as string, 'base64url').toString()) as { o: string; s: string; u: string }

describe('per-user OAuth', () => {
  test('before consent a call answers with the URL to visit; after it, the call goes through with the user\'s own token', async () => {
    const c = await asUser('alice')
    let changed = 0
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++)
    try {
      // Its tools cannot be listed for alice yet: one tool says how to authorise.
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['crm__authorize'])
      const url = await needsAuthorisation(c)
      expect(url.origin).toBe(as.url)
      expect(url.searchParams.get('redirect_uri')).toBe(`${gw.url}/mcp/oauth/callback`)
      expect(url.searchParams.get('code_challenge_method')).toBe('S256')
      expect(url.searchParams.get('resource')).toBe(crm.url)
      expect(stateOf(url)).toMatchObject({ o: 'default', s: 'crm', u: 'alice' })
      const page = await consent(url, 'alice')
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('gw may now use the MCP server <b>crm</b>')
      expect(as.log.filter((l) => l.kind === 'authorization_code')).toEqual([{ kind: 'authorization_code', detail: 'alice' }])
      // The same session, now authorised; its client was told the tool list changed.
      for (let i = 0; i < 50 && !changed; i++) await Bun.sleep(10)
      expect(changed).toBe(1)
      expect(await whoami(c)).toBe('alice')
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['crm__whoami'])
    } finally {
      await c.close()
    }
    // Upstream saw alice's token, never the caller's gw key.
    const calls = crm.requests.filter((r) => r.rpc === 'tools/call')
    expect(calls.at(-1)?.headers.authorization).toMatch(/^Bearer at-alice-/)
    expect(JSON.stringify(crm.requests)).not.toContain(gw.key)
    // A new session of alice's needs no new consent.
    const again = await asUser('alice')
    try {
      expect(await whoami(again)).toBe('alice')
    } finally {
      await again.close()
    }
  })

  test('another user is still asked, and gets their own token; the client registered once is reused', async () => {
    const c = await asUser('bob')
    try {
      const url = await needsAuthorisation(c)
      expect(stateOf(url).u).toBe('bob')
      expect((await consent(url, 'bob')).status).toBe(200)
      expect(await whoami(c)).toBe('bob')
      expect(crm.requests.filter((r) => r.rpc === 'tools/call').at(-1)?.headers.authorization).toMatch(/^Bearer at-bob-/)
    } finally {
      await c.close()
    }
    expect(as.log.filter((l) => l.kind === 'register')).toHaveLength(1)
  })

  test('an expired access token is refreshed and the call goes through; a refused refresh asks the user again', async () => {
    as.accessTtlSeconds = 1
    const c = await asUser('carol')
    try {
      expect((await consent(await needsAuthorisation(c), 'carol')).status).toBe(200)
      expect(await whoami(c)).toBe('carol')
      const first = crm.requests.filter((r) => r.rpc === 'tools/call').at(-1)?.headers.authorization
      await Bun.sleep(1100)
      expect(await whoami(c)).toBe('carol')
      expect(as.log.filter((l) => l.kind === 'refresh_token').map((l) => l.detail)).toContain('carol')
      const second = crm.requests.filter((r) => r.rpc === 'tools/call').at(-1)?.headers.authorization
      expect(second).toMatch(/^Bearer at-carol-/)
      expect(second).not.toBe(first)
      // Calls that find the token expired at once refresh at once; the server rotates refresh tokens, so all
      // but one are refused: those calls still go through, and the grant is kept (the user is not asked again).
      await Bun.sleep(1100)
      expect(await Promise.all([whoami(c), whoami(c), whoami(c)])).toEqual(['carol', 'carol', 'carol'])
      const other = await asUser('carol')
      try {
        expect(await Promise.all([whoami(other), whoami(c)])).toEqual(['carol', 'carol'])
        await Bun.sleep(1100)
        expect(await Promise.all([whoami(other), whoami(c)])).toEqual(['carol', 'carol'])
      } finally {
        await other.close()
      }
      expect(await whoami(c)).toBe('carol')
      // A grant the authorization server no longer honours: the user is asked again.
      as.revokeRefreshTokens()
      await Bun.sleep(1100)
      const url = await needsAuthorisation(c)
      expect(stateOf(url).u).toBe('carol')
    } finally {
      as.accessTtlSeconds = 3600
      await c.close()
    }
  })

  test('two instances refreshing one grant at the same moment: the one the server refuses keeps the tokens the other saved', async () => {
    const c = await asUser('frank')
    try {
      expect((await consent(await needsAuthorisation(c), 'frank')).status).toBe(200)
      expect(await whoami(c)).toBe('frank')
    } finally {
      await c.close()
    }
    // Two instances' providers over one store (as on one database); each refreshes through its own fetch, as
    // instances share no in-process refresh. B reads the grant, then A refreshes it (the server rotates the
    // refresh token) before B's refresh reaches the server with the one it read.
    const store = gw.gw.deps.store.mcp
    const server = (await store.getServers('default')).find((s) => s.name === 'crm')
    if (!server) throw new Error('crm is not registered')
    const provider = () => new UserOAuth(store, 'default', server, 'frank', `${gw.url}/mcp/oauth/callback`)
    const read = async () => JSON.parse((await store.getUserTokens('default', 'crm', 'frank')) ?? '{}') as { tokens?: { refresh_token?: string } }
    const first = (await read()).tokens?.refresh_token
    let raced = false
    const instanceB: typeof fetch = Object.assign(async (url: string | URL | Request, init?: RequestInit) => {
      if (!raced && init?.body instanceof URLSearchParams && init.body.get('grant_type') === 'refresh_token') {
        raced = true
        expect(await auth(provider(), { serverUrl: crm.url, fetchFn: fetch })).toBe('AUTHORIZED')
      }
      return fetch(url, init)
    }, fetch)
    const refused = as.log.filter((l) => l.kind === 'refused').length
    expect(await auth(provider(), { serverUrl: crm.url, fetchFn: instanceB })).toBe('AUTHORIZED')
    expect(raced).toBe(true)
    // B's refresh with the rotated token was refused; its grant was kept and refreshed again, never dropped.
    expect(as.log.filter((l) => l.kind === 'refused').length).toBe(refused + 1)
    const kept = (await read()).tokens?.refresh_token
    expect(kept).toMatch(/^rt-frank-/)
    expect(kept).not.toBe(first)
    const again = await asUser('frank')
    try {
      expect(await whoami(again)).toBe('frank')
    } finally {
      await again.close()
    }
  })

  test("the admin API lists who authorised gw (never their tokens) and forgets one user's tokens: that user is asked again", async () => {
    const users = await gw.admin('GET', '/orgs/default/mcp-servers/crm/users')
    expect(users.status).toBe(200)
    const text = await users.text()
    expect(text).not.toContain('at-alice')
    const data = (JSON.parse(text) as { data: { endUser: string; authorised: boolean }[] }).data
    expect(data.filter((u) => u.authorised).map((u) => u.endUser)).toEqual(expect.arrayContaining(['alice', 'bob']))
    expect((await gw.admin('DELETE', '/orgs/default/mcp-servers/crm/users/alice')).status).toBe(204)
    expect((await gw.admin('DELETE', '/orgs/default/mcp-servers/crm/users/alice')).status).toBe(404)
    const c = await asUser('alice')
    try {
      expect(stateOf(await needsAuthorisation(c)).u).toBe('alice')
    } finally {
      await c.close()
    }
    const bob = await asUser('bob')
    try {
      expect(await whoami(bob)).toBe('bob')
    } finally {
      await bob.close()
    }
  })

  test('a callback link works once; a forged state is refused', async () => {
    const c = await asUser('dave')
    try {
      const url = await needsAuthorisation(c)
      const back = await fetch(url, { headers: { 'x-test-user': 'dave' }, redirect: 'manual' })
      const location = back.headers.get('location') as string
      expect((await fetch(location)).status).toBe(200)
      const replay = await fetch(location)
      expect(replay.status).toBe(400)
      expect(await replay.json()).toMatchObject({ error: true, message: expect.stringContaining('expired or was used already') })
      const forged = new URL(location)
      forged.searchParams.set('state', Buffer.from(JSON.stringify({ o: 'default', s: 'crm', u: 'mallory', n: 'guess' })).toString('base64url'))
      expect((await fetch(forged)).status).toBe(400)
    } finally {
      await c.close()
    }
  })

  test("the server's own headers go to it, never to its authorization server", async () => {
    expect((await gw.admin('PUT', '/orgs/default/mcp-servers/crm-tenant', { url: crm.url, headers: { 'x-tenant-key': 'TENANT-SECRET-42' }, auth: { kind: 'oauth' } })).status).toBe(200)
    const before = as.headerNames.length
    const c = await asUser('tess')
    try {
      const err = await c.callTool({ name: 'crm-tenant__whoami', arguments: {} }).catch((e: unknown) => e as McpError)
      expect((err as McpError).code).toBe(-32042)
      const seen = as.headerNames.slice(before)
      expect(seen.length).toBeGreaterThan(0) // discovery and registration reached it
      for (const names of seen) expect(names).not.toContain('x-tenant-key')
    } finally {
      await c.close()
      await gw.admin('DELETE', '/orgs/default/mcp-servers/crm-tenant')
    }
  })

  test("the end user is the signed token's claim before x-gw-end-user-id; with neither, the call says what to send", async () => {
    await gw.admin('POST', '/orgs/default/signing-secrets', { kid: 'k1', secret: 'a-signing-secret-of-at-least-32-characters' })
    const token = await new AdminService(gw.gw.deps.store).signToken('default', { sub: 'svc', ttl: 600, endUserId: 'erin' })
    const signed = await connect({ authorization: `GwSigned ${token}`, 'x-gw-end-user-id': 'mallory' })
    try {
      expect(stateOf(await needsAuthorisation(signed)).u).toBe('erin')
    } finally {
      await signed.close()
    }
    // A token naming another end user (same subject) cannot drive erin's session, and so never her grants.
    const other = await new AdminService(gw.gw.deps.store).signToken('default', { sub: 'svc', ttl: 600, endUserId: 'bob' })
    const session = await connect({ authorization: `GwSigned ${token}` })
    try {
      const id = (session.transport as StreamableHTTPClientTransport).sessionId as string
      const call = (credential: string) =>
        fetch(`${gw.url}/mcp`, {
          method: 'POST',
          headers: { authorization: `GwSigned ${credential}`, 'mcp-session-id': id, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
        })
      expect((await call(other)).status).toBe(404)
      expect((await call(token)).status).toBe(200)
    } finally {
      await session.close()
    }
    const anonymous = await connect({ authorization: `Bearer ${gw.key}` })
    try {
      const err = (await anonymous.callTool({ name: 'crm__whoami', arguments: {} }).catch((e: unknown) => e)) as McpError
      expect(err).toBeInstanceOf(McpError)
      expect(err.message).toContain('send x-gw-end-user-id')
    } finally {
      await anonymous.close()
    }
  })
})

test('without dynamic client registration: the call says an admin must set auth.clientId; with a client registered by hand it works', async () => {
  const handAs = startAuthServer({ registration: false, clients: { 'hand-client': [`${gw.url}/mcp/oauth/callback`] } })
  const erp = await startMcpServer({
    oauth: { authorizationServer: handAs.url, verify: (token) => (handAs.verify(token) ? { token, clientId: 'hand-client', scopes: [] } : undefined) },
    build: (s) => s.registerTool('ping', { description: 'p' }, async () => ({ content: [{ type: 'text', text: 'pong' }] })),
  })
  try {
    await gw.admin('PUT', '/orgs/default/mcp-servers/erp', { url: erp.url, auth: { kind: 'oauth' } })
    const c = await asUser('gina')
    try {
      const err = (await c.callTool({ name: 'erp__ping', arguments: {} }).catch((e: unknown) => e)) as McpError
      expect(err).toBeInstanceOf(McpError)
      expect(err.message).toContain('must register gw there and set auth.clientId')
      await gw.admin('PUT', '/orgs/default/mcp-servers/erp', { url: erp.url, auth: { kind: 'oauth', clientId: 'hand-client' } })
      const res = await c.callTool({ name: 'erp__ping', arguments: {} }).catch((e: unknown) => e as McpError)
      const url = new URL(((res as McpError).data as { elicitations: { url: string }[] }).elicitations[0]?.url as string)
      expect(url.searchParams.get('client_id')).toBe('hand-client')
      expect((await consent(url, 'gina')).status).toBe(200)
      expect((await c.callTool({ name: 'erp__ping', arguments: {} })).content).toEqual([{ type: 'text', text: 'pong' }])
    } finally {
      await c.close()
    }
  } finally {
    await gw.admin('DELETE', '/orgs/default/mcp-servers/erp')
    await erp.stop()
    handAs.stop()
  }
})

describe('two instances on one database', () => {
  test('an authorisation started on one instance completes on the other (GW_PUBLIC_URL), and both then use the tokens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-mcp-two-'))
    const shared = { GW_DB: join(dir, 'gw.db'), GW_SECRET: 'a-shared-secret-for-two-instances-0123' }
    const b = await startTestGateway({}, shared)
    const a = await startTestGateway({}, { ...shared, GW_PUBLIC_URL: b.url, GW_SERVICE_KEY: b.key })
    try {
      expect((await a.admin('PUT', '/orgs/default/mcp-servers/crm', { url: crm.url, auth: { kind: 'oauth' } })).status).toBe(200)
      const onA = new Client({ name: 'agent', version: '1' })
      await onA.connect(new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${b.key}`, 'x-gw-end-user-id': 'frank' } } }))
      try {
        const url = await needsAuthorisation(onA)
        expect(url.searchParams.get('redirect_uri')).toBe(`${b.url}/mcp/oauth/callback`)
        const back = await fetch(url, { headers: { 'x-test-user': 'frank' }, redirect: 'manual' })
        const location = back.headers.get('location') as string
        expect(location.startsWith(`${b.url}/mcp/oauth/callback?`)).toBe(true)
        expect((await fetch(location)).status).toBe(200)
        expect(await whoami(onA)).toBe('frank')
      } finally {
        await onA.close()
      }
      const onB = new Client({ name: 'agent', version: '1' })
      await onB.connect(new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${b.key}`, 'x-gw-end-user-id': 'frank' } } }))
      try {
        expect(await whoami(onB)).toBe('frank')
      } finally {
        await onB.close()
      }
    } finally {
      await a.stop()
      await b.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
