// Roles on the admin API (PRODUCT §18): every operation × every kind of caller, allowed or 403 with nothing changed; other orgs refused.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN_OPERATIONS } from '../../src/http/routes/admin'
import { MCP_ADMIN_OPERATIONS } from '../../src/http/routes/mcp-admin'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
/** Personal admin tokens by caller. */
const tokens: Record<string, string> = {}
const userIds: Record<string, string> = {}
let n = 0

type Caller = 'admin-token' | 'owner' | 'admin' | 'viewer'
const CALLERS: Caller[] = ['admin-token', 'owner', 'admin', 'viewer']

function call(token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${gw.url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function ok(res: Promise<Response>): Promise<Record<string, unknown>> {
  const r = await res
  if (r.status >= 300) throw new Error(`set-up failed: ${r.status} ${await r.text()}`)
  return r.status === 204 ? {} : ((await r.json()) as Record<string, unknown>)
}

const admin = (method: string, path: string, body?: unknown) => ok(gw.admin(method, path, body))

beforeAll(async () => {
  gw = await startTestGateway()
  for (const org of ['alpha', 'beta']) {
    await admin('POST', '/orgs', { id: org, name: org })
    // Nothing listens there: a prompt run that is allowed fails upstream (502), never leaving the machine.
    await admin('PUT', `/orgs/${org}/providers/openai`, { apiKey: 'sk-role-test-provider-key-0000', baseUrl: 'http://127.0.0.1:9' })
    await admin('POST', `/orgs/${org}/prompts`, { slug: 'greet' })
    await admin('POST', `/orgs/${org}/prompts/greet/versions`, { userTemplate: 'hi', model: 'openai/gpt-4o-mini', publish: true })
    await admin('PUT', `/orgs/${org}/mcp-servers/tools`, { url: 'http://127.0.0.1:9/mcp' })
  }
  for (const [role, orgs] of [['owner', []], ['admin', ['alpha']], ['viewer', ['alpha']]] as const) {
    const u = await admin('POST', '/users', { email: `${role}@example.com`, role, orgs })
    userIds[role] = u.id as string
    tokens[role] = (await admin('POST', `/users/${u.id}/tokens`, { name: 'tests' })).token as string
  }
  tokens['admin-token'] = ADMIN_TOKEN
})
afterAll(async () => {
  await gw.stop()
})

/** What a refused change must leave as it was: both orgs whole, the users and the audit log. */
async function state(): Promise<string> {
  const parts = await Promise.all([
    admin('GET', '/orgs/alpha'),
    admin('GET', '/orgs/beta'),
    admin('GET', '/orgs/alpha/prompts/greet'),
    admin('GET', '/orgs/alpha/mcp-servers'),
    admin('GET', '/orgs/beta/mcp-servers'),
    admin('GET', '/orgs/beta/prompts/greet'),
    admin('GET', '/users'),
    admin('GET', '/orgs'),
    admin('GET', '/audit?limit=500'),
  ])
  return JSON.stringify(parts)
}

/**
 * One request per operation. `prepare` makes what the request acts on (with the admin token) and gives
 * the path; `need` is what the operation needs of the caller (`self`: the user the path names).
 */
interface Case {
  need: 'read' | 'change' | 'owner' | 'self'
  /** An org-scoped operation: run on alpha (the admin's and viewer's org) and on beta (no role there). */
  org: boolean
  method: string
  path: (org: string, caller: Caller) => Promise<string> | string
  body?: () => unknown
  /** Statuses that mean "allowed" (default: any 2xx). */
  allowed?: number[]
}

const fresh = () => `t${++n}`
const CASES: Record<string, Case> = {
  createOrg: { need: 'owner', org: false, method: 'POST', path: () => '/orgs', body: () => ({ id: fresh(), name: 'x' }) },
  listOrgs: { need: 'read', org: false, method: 'GET', path: () => '/orgs' },
  getMe: { need: 'read', org: false, method: 'GET', path: () => '/me' },
  listAudit: { need: 'read', org: false, method: 'GET', path: () => '/audit' },
  createUser: { need: 'owner', org: false, method: 'POST', path: () => '/users', body: () => ({ email: `${fresh()}@example.com`, role: 'viewer' }) },
  listUsers: { need: 'owner', org: false, method: 'GET', path: () => '/users' },
  getUser: { need: 'self', org: false, method: 'GET', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}` },
  patchUser: { need: 'owner', org: false, method: 'PATCH', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}`, body: () => ({ role: 'admin' }) },
  deleteUser: { need: 'owner', org: false, method: 'DELETE', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}` },
  createUserToken: { need: 'self', org: false, method: 'POST', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}/tokens`, body: () => ({}) },
  revokeUserToken: {
    need: 'self',
    org: false,
    method: 'DELETE',
    path: async () => {
      const u = await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })
      return `/users/${u.id}/tokens/${(await admin('POST', `/users/${u.id}/tokens`, {})).id}`
    },
  },
  createSignInLink: { need: 'owner', org: false, method: 'POST', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}/sign-in-link` },
  setUserPassword: { need: 'self', org: false, method: 'PUT', path: async () => `/users/${(await admin('POST', '/users', { email: `${fresh()}@example.com`, role: 'viewer' })).id}/password`, body: () => ({ password: 'correct horse battery' }) },
  getOrg: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}` },
  listServiceKeys: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/service-keys` },
  listSigningSecrets: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/signing-secrets` },
  listPrompts: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/prompts` },
  listOrgLogs: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/logs` },
  getOrgLog: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/logs/no-such-entry`, allowed: [404] },
  getOrgStats: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/stats` },
  getOrgUsage: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/usage` },
  listRoutes: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/routes` },
  getBudgets: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/budgets` },
  getPrompt: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/prompts/greet` },
  putRoute: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/routes/${fresh()}`, body: () => ({ targets: [{ model: 'openai/gpt-4o' }] }) },
  deleteRoute: {
    need: 'change',
    org: true,
    method: 'DELETE',
    path: async (o) => {
      const name = fresh()
      await admin('PUT', `/orgs/${o}/routes/${name}`, { targets: [{ model: 'openai/gpt-4o' }] })
      return `/orgs/${o}/routes/${name}`
    },
  },
  putPolicy: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/policy`, body: () => ({ maxTokens: 1000 + n++ }) },
  putProviderKey: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/providers/anthropic`, body: () => ({ apiKey: `sk-ant-${fresh()}-0123456789` }) },
  putNamedProviderKey: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/providers/openai/keys/${fresh()}`, body: () => ({ apiKey: 'sk-named-key-0123456789' }) },
  deleteProviderKey: {
    need: 'change',
    org: true,
    method: 'DELETE',
    path: async (o) => {
      const name = fresh()
      await admin('PUT', `/orgs/${o}/providers/openai/keys/${name}`, { apiKey: 'sk-named-key-0123456789' })
      return `/orgs/${o}/providers/openai/keys/${name}`
    },
  },
  createServiceKey: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/service-keys`, body: () => ({ name: fresh() }) },
  revokeServiceKey: { need: 'change', org: true, method: 'DELETE', path: async (o) => `/orgs/${o}/service-keys/${(await admin('POST', `/orgs/${o}/service-keys`, {})).id}` },
  rotateServiceKey: { need: 'change', org: true, method: 'POST', path: async (o) => `/orgs/${o}/service-keys/${(await admin('POST', `/orgs/${o}/service-keys`, {})).id}/rotate`, body: () => ({ graceSeconds: 60 }) },
  addSigningSecret: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/signing-secrets`, body: () => ({ kid: fresh() }) },
  deleteSigningSecret: { need: 'change', org: true, method: 'DELETE', path: async (o) => `/orgs/${o}/signing-secrets/${(await admin('POST', `/orgs/${o}/signing-secrets`, {})).kid}` },
  putOidc: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/oidc`, body: () => ({ issuer: 'https://idp.example.com', audience: fresh() }) },
  createPrompt: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/prompts`, body: () => ({ slug: fresh() }) },
  addPromptVersion: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/prompts/greet/versions`, body: () => ({ userTemplate: `hi ${fresh()}`, model: 'openai/gpt-4o-mini' }) },
  // Allowed, it reaches the provider (none listens here: 502); refused, it never does.
  runPromptAsAdmin: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/prompts/greet/run`, body: () => ({}), allowed: [502, 504] },
  publishPromptVersion: { need: 'change', org: true, method: 'POST', path: (o) => `/orgs/${o}/prompts/greet/versions/1/publish` },
  putPartial: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/partials/${fresh()}`, body: () => ({ template: 'x' }) },
  listMcpServers: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/mcp-servers` },
  getMcpServer: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/mcp-servers/tools` },
  putMcpServer: { need: 'change', org: true, method: 'PUT', path: (o) => `/orgs/${o}/mcp-servers/${fresh()}`, body: () => ({ url: 'http://127.0.0.1:9/mcp', auth: { kind: 'bearer', token: 'mcp-secret-token-0123' } }) },
  deleteMcpServer: {
    need: 'change',
    org: true,
    method: 'DELETE',
    path: async (o) => {
      const name = fresh()
      await admin('PUT', `/orgs/${o}/mcp-servers/${name}`, { url: 'http://127.0.0.1:9/mcp' })
      return `/orgs/${o}/mcp-servers/${name}`
    },
  },
  listMcpServerUsers: { need: 'read', org: true, method: 'GET', path: (o) => `/orgs/${o}/mcp-servers/tools/users` },
  // Nothing is held for that user: allowed, it is 404; refused, 403 before the store is asked.
  forgetMcpServerUser: { need: 'change', org: true, method: 'DELETE', path: (o) => `/orgs/${o}/mcp-servers/tools/users/${fresh()}`, allowed: [404] },
}

/** Whether a caller may: owners everything; an admin changes its orgs; a viewer reads its orgs; `self` only for oneself. */
function mayDo(caller: Caller, c: Case, org: string | undefined): boolean {
  if (caller === 'admin-token' || caller === 'owner') return true
  if (c.need === 'owner' || c.need === 'self') return false
  if (org === 'beta') return false
  return c.need === 'read' || caller === 'admin'
}

test('every admin operation is in the matrix', () => {
  expect(Object.keys(CASES).sort()).toEqual([...ADMIN_OPERATIONS, ...MCP_ADMIN_OPERATIONS].map((o) => o.id).sort())
})

describe('role matrix', () => {
  for (const [id, c] of Object.entries(CASES)) {
    for (const caller of CALLERS) {
      for (const org of c.org ? ['alpha', 'beta'] : [undefined]) {
        const allowed = mayDo(caller, c, org)
        test(`${id} by ${caller}${org ? ` on ${org}` : ''}: ${allowed ? 'allowed' : '403'}`, async () => {
          const path = await c.path(org ?? 'alpha', caller)
          const before = allowed || c.method === 'GET' ? undefined : await state()
          const res = await call(tokens[caller] as string, c.method, path, c.body?.())
          const text = await res.text()
          if (allowed) {
            if (c.allowed) expect(c.allowed).toContain(res.status)
            else expect(`${res.status} ${text}`).toMatch(/^2\d\d /)
          } else {
            expect(res.status).toBe(403)
            expect(JSON.parse(text)).toMatchObject({ error: true, code: 'forbidden' })
            expect(res.headers.get('x-gw-request-id')).toBeTruthy()
            if (before !== undefined) expect(await state()).toBe(before)
          }
        })
      }
    }
  }
})

describe('scoped reads and personal tokens', () => {
  test("a user may read and act on its own user record, token and password (not another's)", async () => {
    for (const role of ['admin', 'viewer'] as const) {
      const me = userIds[role] as string
      expect((await call(tokens[role] as string, 'GET', `/users/${me}`)).status).toBe(200)
      expect((await call(tokens[role] as string, 'PUT', `/users/${me}/password`, { password: 'another long password' })).status).toBe(204)
      const made = await call(tokens[role] as string, 'POST', `/users/${me}/tokens`, { name: 'mine' })
      expect(made.status).toBe(201)
      expect(((await made.json()) as { token: string }).token).toMatch(/^gw_at_/)
    }
  })

  test("a personal token is revoked by its user (or an owner): 401 from its next request, audited; its last use shows; another user's token is 404", async () => {
    const u = await admin('POST', '/users', { email: 'revoker@example.com', role: 'viewer', orgs: ['alpha'] })
    const made = (await admin('POST', `/users/${u.id}/tokens`, { name: 'laptop' })) as { id: string; token: string }
    const kept = (await admin('POST', `/users/${u.id}/tokens`, { name: 'ci' })) as { id: string; token: string }
    const before = Date.now()
    expect((await call(made.token, 'GET', '/me')).status).toBe(200)
    const shown = (await ok(call(made.token, 'GET', `/users/${u.id}`))).tokens as { id: string; name: string; lastUsedAt: string | null }[]
    const used = shown.find((t) => t.id === made.id)
    expect(Date.parse(used?.lastUsedAt as string)).toBeGreaterThanOrEqual(before - 1000)
    expect(shown.find((t) => t.id === kept.id)?.lastUsedAt).toBeNull()
    expect(JSON.stringify(shown)).not.toContain(made.token)

    // Another user's token through this user's path: nothing is revoked.
    const other = (await admin('POST', `/users/${userIds.viewer}/tokens`, {})) as { id: string; token: string }
    const foreign = await call(made.token, 'DELETE', `/users/${u.id}/tokens/${other.id}`)
    expect(foreign.status).toBe(404)
    expect(await foreign.json()).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('has no token') })
    expect((await call(other.token, 'GET', '/me')).status).toBe(200)

    // The user revokes its own token with another of its tokens.
    expect((await call(kept.token, 'DELETE', `/users/${u.id}/tokens/${made.id}`)).status).toBe(204)
    const refused = await call(made.token, 'GET', '/me')
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ error: true, code: 'unauthorized' })
    expect((await call(kept.token, 'DELETE', `/users/${u.id}/tokens/${made.id}`)).status).toBe(404)
    expect(((await ok(call(kept.token, 'GET', `/users/${u.id}`))).tokens as { id: string }[]).map((t) => t.id)).toEqual([kept.id])
    const audit = (await admin('GET', '/audit?action=user.token.delete&limit=5')).data as Record<string, unknown>[]
    expect(audit[0]).toMatchObject({ action: 'user.token.delete', target: `user:${u.id}/token:${made.id}`, before: { id: made.id, name: 'laptop' }, after: null, actor: { kind: 'user', id: u.id } })
  })

  test('GET /admin/orgs and /admin/me show an admin or viewer only its orgs; a foreign org in /admin/audit is 403', async () => {
    const orgs = (await ok(call(tokens.viewer as string, 'GET', '/orgs'))).data as { id: string }[]
    expect(orgs.map((o) => o.id)).toEqual(['alpha'])
    expect(await ok(call(tokens.admin as string, 'GET', '/me'))).toMatchObject({ kind: 'user', role: 'admin', orgs: ['alpha'], email: 'admin@example.com' })
    expect(await ok(call(ADMIN_TOKEN, 'GET', '/me'))).toMatchObject({ kind: 'admin-token', role: 'owner' })
    expect((await call(tokens.viewer as string, 'GET', '/audit?org=beta')).status).toBe(403)
    const seen = (await ok(call(tokens.viewer as string, 'GET', '/audit?limit=500'))).data as { org: string | null }[]
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.every((e) => e.org === 'alpha')).toBe(true)
  })

  test('/metrics (every org’s figures) is for owners: admins and viewers get 403', async () => {
    for (const [caller, status] of [['admin-token', 200], ['owner', 200], ['admin', 403], ['viewer', 403]] as const) {
      const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${tokens[caller]}` } })
      expect(`${caller} ${res.status}`).toBe(`${caller} ${status}`)
    }
  })

  test("a personal token stops working when its user is removed; a changed role applies to the token's next request", async () => {
    const u = await admin('POST', '/users', { email: 'leaver@example.com', role: 'admin', orgs: ['alpha'] })
    const { token } = (await admin('POST', `/users/${u.id}/tokens`, {})) as { token: string }
    expect((await call(token, 'PUT', '/orgs/alpha/partials/leaver', { template: 'a' })).status).toBe(200)
    await admin('PATCH', `/users/${u.id}`, { role: 'viewer' })
    expect((await call(token, 'PUT', '/orgs/alpha/partials/leaver', { template: 'b' })).status).toBe(403)
    expect((await call(token, 'GET', '/orgs/alpha')).status).toBe(200)
    await admin('DELETE', `/users/${u.id}`)
    const gone = await call(token, 'GET', '/orgs/alpha')
    expect(gone.status).toBe(401)
    expect(await gone.json()).toMatchObject({ error: true, code: 'unauthorized' })
    expect((await call('gw_at_notarealtoken0000000000000000000000000000', 'GET', '/me')).status).toBe(401)
  })
})
