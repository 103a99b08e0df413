// Per-user OAuth to an upstream MCP server (PRODUCT §20) against a fake authorization server that checks
// PKCE: the URL to visit before consent, success after, each user's own token upstream, refresh on expiry,
// another user still asked, the end user of §4's precedence, and the caller's gw credential never upstream.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { AdminService } from '../../src/admin/admin-service'
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
      // The same session, now authorised.
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

  test("the end user is the signed token's claim before x-gw-end-user-id; with neither, the call says what to send", async () => {
    await gw.admin('POST', '/orgs/default/signing-secrets', { kid: 'k1', secret: 'a-signing-secret-of-at-least-32-characters' })
    const token = await new AdminService(gw.gw.deps.store).signToken('default', { sub: 'svc', ttl: 600, endUserId: 'erin' })
    const signed = await connect({ authorization: `GwSigned ${token}`, 'x-gw-end-user-id': 'mallory' })
    try {
      expect(stateOf(await needsAuthorisation(signed)).u).toBe('erin')
    } finally {
      await signed.close()
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
