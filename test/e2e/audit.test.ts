// The audit log (PRODUCT §18): one entry per change, for every kind of change and every kind of actor, secrets masked,
// GET /admin/audit's filters and cursor paging, and entries that no one can change (SQLite, and PostgreSQL with GW_TEST_STORE=postgres).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runAdminCommand } from '../../src/cli/admin-commands'
import type { AuditEntry } from '../../src/domain/people'
import { startLogRetention } from '../../src/store/log-retention'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

const onPostgres = process.env.GW_TEST_STORE === 'postgres'
const dir = mkdtempSync(join(tmpdir(), 'gw-audit-'))
let gw: TestGateway

type Entry = AuditEntry

const PROVIDER_KEY = 'sk-audit-provider-secret-0123456789'
const CONFIG_KEY = 'sk-config-file-provider-secret-9876'
const ENV_KEY = 'sk-environment-provider-secret-5555'

beforeAll(async () => {
  const config = join(dir, 'gw.yaml')
  writeFileSync(config, `orgs:\n  filed:\n    providers:\n      openai:\n        - name: default\n          apiKey: ${CONFIG_KEY}\n    routes:\n      fast:\n        targets:\n          - model: openai/gpt-4o-mini\n`)
  // The CLI opens the same database as the gateway: a file (SQLite) or the test's schema (PostgreSQL).
  gw = await startTestGateway({}, { GW_CONFIG: config, OPENAI_API_KEY: ENV_KEY, ...(onPostgres ? {} : { GW_DB: join(dir, 'gw.db') }) })
})
afterAll(async () => {
  await gw.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function audit(query = ''): Promise<{ data: Entry[]; nextCursor: string | null }> {
  const res = await gw.admin('GET', `/audit${query}`)
  expect(res.status).toBe(200)
  return (await res.json()) as { data: Entry[]; nextCursor: string | null }
}

/** Every entry, walking the pages. */
async function everything(query = ''): Promise<Entry[]> {
  const out: Entry[] = []
  let cursor: string | null = null
  do {
    const page: { data: Entry[]; nextCursor: string | null } = await audit(`?limit=7${query}${cursor ? `&cursor=${cursor}` : ''}`)
    out.push(...page.data)
    cursor = page.nextCursor
  } while (cursor)
  return out
}

/** Runs a change, then returns the entries it appended (newest first). */
async function appended(change: () => Promise<unknown>): Promise<Entry[]> {
  const [newest] = (await audit('?limit=1')).data
  await change()
  const all = (await audit('?limit=500')).data
  const at = newest ? all.findIndex((e) => e.id === newest.id) : all.length
  return all.slice(0, at)
}

async function adminOk(method: string, path: string, body?: unknown, token = ADMIN_TOKEN): Promise<{ res: Response; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return { res, body: res.status === 204 ? {} : ((await res.json()) as Record<string, unknown>) }
}

test('provider keys from the environment are recorded as configuration, masked', async () => {
  const env = (await everything()).filter((e) => e.org === 'default' && e.action === 'provider.set')
  expect(env.map((e) => [e.target, e.actor])).toEqual([['provider:openai/default', { kind: 'config-file' }]])
  expect(JSON.stringify(env)).not.toContain(ENV_KEY)
})

test('a config file’s changes are recorded once, as made by the config file, its key masked', async () => {
  const filed = (await everything()).filter((e) => e.org === 'filed')
  expect(filed.map((e) => e.action).sort()).toEqual(['org.create', 'provider.set', 'route.set'])
  for (const e of filed) expect(e.actor).toEqual({ kind: 'config-file' })
  expect(JSON.stringify(filed)).not.toContain(CONFIG_KEY)
  expect(filed.find((e) => e.action === 'provider.set')?.after).toMatchObject({ provider: 'openai', apiKey: 'sk-…9876' })
})

describe('every change through the admin API appends exactly one entry', () => {
  const secrets: string[] = [PROVIDER_KEY]
  const expectOne = async (action: string, org: string | null, target: string | RegExp, change: () => Promise<{ res: Response; body: Record<string, unknown> }>) => {
    let res: Response | undefined
    let body: Record<string, unknown> = {}
    const entries = await appended(async () => ({ res, body } = await change()))
    expect(entries).toHaveLength(1)
    const [e] = entries as [Entry]
    expect(e).toMatchObject({ action, org, actor: { kind: 'admin-token' }, requestId: res?.headers.get('x-gw-request-id') })
    expect(e.target).toMatch(target)
    expect(e.ip).toBe('127.0.0.1')
    for (const s of [...secrets, ...Object.values(body).filter((v): v is string => typeof v === 'string' && /^(gw_sk_|gw_at_)/.test(v))]) expect(JSON.stringify(e)).not.toContain(s)
    return { e, body }
  }

  test('orgs, policy, providers, keys, secrets, OIDC, routes, prompts, partials, users', async () => {
    await expectOne('org.create', 'acme', 'org:acme', () => adminOk('POST', '/orgs', { id: 'acme', name: 'Acme' }))
    const policy = await expectOne('policy.set', 'acme', 'policy', () => adminOk('PUT', '/orgs/acme/policy', { maxTokens: 100, budgets: [{ scope: 'org', period: 'month', usd: 5 }] }))
    expect(policy.e).toMatchObject({ before: {}, after: { maxTokens: 100, budgets: [{ scope: 'org', period: 'month', usd: 5 }] } })
    const p1 = await expectOne('provider.set', 'acme', 'provider:openai/default', () => adminOk('PUT', '/orgs/acme/providers/openai', { apiKey: PROVIDER_KEY }))
    expect(p1.e).toMatchObject({ before: null, after: { apiKey: 'sk-…6789' } })
    const p2 = await expectOne('provider.set', 'acme', 'provider:openai/default', () => adminOk('PUT', '/orgs/acme/providers/openai', { apiKey: PROVIDER_KEY, enabled: false }))
    expect(p2.e).toMatchObject({ before: { enabled: true }, after: { enabled: false } })
    await expectOne('provider.set', 'acme', 'provider:openai/second', () => adminOk('PUT', '/orgs/acme/providers/openai/keys/second', { apiKey: PROVIDER_KEY }))
    await expectOne('provider.delete', 'acme', 'provider:openai/second', () => adminOk('DELETE', '/orgs/acme/providers/openai/keys/second'))
    const key = await expectOne('service-key.create', 'acme', /^service-key:sk_/, () => adminOk('POST', '/orgs/acme/service-keys', { name: 'ci' }))
    secrets.push(key.body.key as string)
    const rotated = await expectOne('service-key.rotate', 'acme', `service-key:${key.body.id}`, () => adminOk('POST', `/orgs/acme/service-keys/${key.body.id}/rotate`, { graceSeconds: 30 }))
    secrets.push(rotated.body.key as string)
    await expectOne('service-key.revoke', 'acme', `service-key:${rotated.body.id}`, () => adminOk('DELETE', `/orgs/acme/service-keys/${rotated.body.id}`))
    const secret = await expectOne('signing-secret.create', 'acme', 'signing-secret:k1', () => adminOk('POST', '/orgs/acme/signing-secrets', { kid: 'k1' }))
    secrets.push(secret.body.secret as string)
    await expectOne('signing-secret.delete', 'acme', 'signing-secret:k1', () => adminOk('DELETE', '/orgs/acme/signing-secrets/k1'))
    await expectOne('oidc.set', 'acme', 'oidc', () => adminOk('PUT', '/orgs/acme/oidc', { issuer: 'https://idp.example.com', audience: 'gw' }))
    await expectOne('route.set', 'acme', 'route:fast', () => adminOk('PUT', '/orgs/acme/routes/fast', { targets: [{ model: 'openai/gpt-4o' }] }))
    await expectOne('route.delete', 'acme', 'route:fast', () => adminOk('DELETE', '/orgs/acme/routes/fast'))
    await expectOne('prompt.create', 'acme', 'prompt:greet', () => adminOk('POST', '/orgs/acme/prompts', { slug: 'greet' }))
    await expectOne('prompt.version.create', 'acme', 'prompt:greet/v1', () => adminOk('POST', '/orgs/acme/prompts/greet/versions', { userTemplate: 'hi', model: 'openai/gpt-4o' }))
    await expectOne('prompt.publish', 'acme', 'prompt:greet', () => adminOk('POST', '/orgs/acme/prompts/greet/versions/1/publish'))
    await expectOne('partial.set', 'acme', 'partial:sig', () => adminOk('PUT', '/orgs/acme/partials/sig', { template: '-- Acme' }))
    secrets.push('mcp-upstream-secret-0123456789')
    const mcp = await expectOne('mcp-server.set', 'acme', 'mcp-server:tools', () =>
      adminOk('PUT', '/orgs/acme/mcp-servers/tools', { url: 'http://127.0.0.1:9/mcp', auth: { kind: 'bearer', token: 'mcp-upstream-secret-0123456789' } }),
    )
    expect(mcp.e.before).toBeNull()
    await expectOne('mcp-server.delete', 'acme', 'mcp-server:tools', () => adminOk('DELETE', '/orgs/acme/mcp-servers/tools'))
    const user = await expectOne('user.create', null, /^user:u_/, () => adminOk('POST', '/users', { email: 'Ada@Example.com', role: 'admin', orgs: ['acme'] }))
    expect(user.e.after).toMatchObject({ email: 'ada@example.com', role: 'admin', orgs: ['acme'] })
    await expectOne('user.update', null, `user:${user.body.id}`, () => adminOk('PATCH', `/users/${user.body.id}`, { role: 'viewer' }))
    secrets.push('a long enough password')
    await expectOne('user.password.set', null, `user:${user.body.id}`, () => adminOk('PUT', `/users/${user.body.id}/password`, { password: 'a long enough password' }))
    const token = await expectOne('user.token.create', null, new RegExp(`^user:${user.body.id}/token:at_`), () => adminOk('POST', `/users/${user.body.id}/tokens`, {}))
    secrets.push(token.body.token as string)
    await expectOne('user.delete', null, `user:${user.body.id}`, () => adminOk('DELETE', `/users/${user.body.id}`))
    // Reads and refusals append nothing.
    expect(await appended(() => adminOk('GET', '/orgs/acme'))).toHaveLength(0)
    expect(await appended(() => gw.admin('PUT', '/orgs/acme/policy', { maxTokens: 'many' }))).toHaveLength(0)
    // Nothing any entry holds is a secret.
    const all = JSON.stringify(await everything())
    for (const s of secrets) expect(all).not.toContain(s)
  })

  test('a user acting with a personal token is the actor, by id and email', async () => {
    const u = (await adminOk('POST', '/users', { email: 'grace@example.com', role: 'admin', orgs: ['acme'] })).body
    const token = (await adminOk('POST', `/users/${u.id}/tokens`, {})).body.token as string
    const entries = await appended(() => adminOk('PUT', '/orgs/acme/partials/by-grace', { template: 'g' }, token))
    expect(entries).toHaveLength(1)
    expect(entries[0]?.actor).toEqual({ kind: 'user', id: u.id as string, email: 'grace@example.com' })
    expect((await audit(`?actor=grace@example.com`)).data.map((e) => e.action)).toEqual(['partial.set'])
  })

  test('a change made in the dashboard (a user’s session) names the user, with the request id', async () => {
    const u = (await adminOk('POST', '/users', { email: 'dash@example.com', role: 'admin', orgs: ['acme'] })).body
    await adminOk('PUT', `/users/${u.id}/password`, { password: 'dashboard password 1' })
    const signIn = await fetch(`${gw.url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'dash@example.com', password: 'dashboard password 1' }) })
    expect(signIn.status).toBe(201)
    const { csrf } = (await signIn.json()) as { csrf: string }
    const cookie = (signIn.headers.get('set-cookie') as string).split(';')[0] as string
    let res: Response | undefined
    const entries = await appended(async () => {
      res = await fetch(`${gw.url}/admin/orgs/acme/routes/from-dashboard`, {
        method: 'PUT',
        headers: { cookie, 'x-gw-csrf': csrf, 'content-type': 'application/json' },
        body: JSON.stringify({ targets: [{ model: 'openai/gpt-4o' }] }),
      })
    })
    expect(res?.status).toBe(200)
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({ action: 'route.set', actor: { kind: 'user', id: u.id as string, email: 'dash@example.com' }, requestId: res?.headers.get('x-gw-request-id') })
  })

  test('the CLI is the actor of what its commands change', async () => {
    const config = gw.gw.deps.config
    const out: string[] = []
    const log = console.log
    console.log = (...xs: unknown[]) => void out.push(xs.join(' '))
    let entries: Entry[]
    try {
      entries = await appended(async () => {
        await runAdminCommand(config, ['route', 'set', 'cli-route', '--targets', 'openai/gpt-4o', '--org', 'acme'], new Set())
        await runAdminCommand(config, ['user', 'create', '--email', 'cli@example.com', '--role', 'viewer', '--orgs', 'acme'], new Set())
      })
    } finally {
      console.log = log
    }
    expect(entries.map((e) => [e.action, e.actor, e.requestId])).toEqual([
      ['user.sign-in-link.create', { kind: 'cli' }, null],
      ['user.create', { kind: 'cli' }, null],
      ['route.set', { kind: 'cli' }, null],
    ])
    // The link the CLI printed is not in the log.
    const link = /first-sign-in=([\w-]+)/.exec(out.join('\n'))?.[1]
    expect(link).toBeTruthy()
    expect(JSON.stringify(entries)).not.toContain(link as string)
  })
})

describe('GET /admin/audit', () => {
  test('pages return every entry exactly once, newest first, and the filters hold across pages', async () => {
    for (let i = 0; i < 23; i++) await adminOk('PUT', `/orgs/acme/partials/p${i}`, { template: `t${i}` })
    const all = await everything()
    const one = (await audit('?limit=500')).data
    expect(all.map((e) => e.id)).toEqual(one.map((e) => e.id))
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length)
    const times = all.map((e) => e.id)
    expect([...times].sort().reverse()).toEqual(times) // UUIDv7 ids: newest first
    const partials = await everything('&action=partial.set&org=acme&actor=admin-token')
    expect(partials.length).toBe(24)
    expect(partials.every((e) => e.action === 'partial.set' && e.org === 'acme' && e.actor.kind === 'admin-token')).toBe(true)
    const prefix = await everything('&action=service-key.&org=acme')
    expect(prefix.map((e) => e.action).sort()).toEqual(['service-key.create', 'service-key.revoke', 'service-key.rotate'])
    const since = all[5]?.time as string
    expect((await everything(`&since=${encodeURIComponent(since)}`)).every((e) => e.time >= since)).toBe(true)
  })

  test('bad filters are 400 in gw’s error shape', async () => {
    for (const q of ['?limit=0', '?cursor=nonsense', '?since=yesterday']) {
      const res = await gw.admin('GET', `/audit${q}`)
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ error: true, code: 'gateway_error', requestId: expect.any(String) })
    }
  })

  test('no API changes or deletes entries, and the database refuses to', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) expect([404, 405]).toContain((await gw.admin(method, '/audit')).status)
    const [e] = (await audit('?limit=1')).data as [Entry]
    if (onPostgres) {
      const sql = new SQL(gw.gw.deps.config.databaseUrl as string)
      try {
        await expect(sql`UPDATE audit_log SET action = 'forged' WHERE id = ${e.id}`).rejects.toThrow(/never changed/)
        await expect(sql`DELETE FROM audit_log WHERE id = ${e.id}`).rejects.toThrow(/never changed/)
        await expect(sql`TRUNCATE audit_log`).rejects.toThrow(/never changed/)
      } finally {
        await sql.close()
      }
    } else {
      const db = new Database(join(dir, 'gw.db'))
      try {
        expect(() => db.run("UPDATE audit_log SET action = 'forged' WHERE id = ?", [e.id])).toThrow(/never changed/)
      } finally {
        db.close()
      }
    }
    expect((await audit('?limit=1')).data[0]).toEqual(e)
  })
})

test('GW_AUDIT_RETENTION_DAYS prunes only entries past it (the database lets the pruner, and only it, delete)', async () => {
  const store = gw.gw.deps.store
  const old = { actor: { kind: 'cli' as const }, action: 'org.create', org: 'ancient', target: 'org:ancient', before: null, after: null, requestId: null, ip: null }
  await store.audit.append({ ...old, id: Bun.randomUUIDv7(), time: new Date(Date.now() - 400 * 86_400_000).toISOString() })
  const before = await everything()
  expect(before.some((e) => e.org === 'ancient')).toBe(true)
  // Forever by default: nothing is pruned.
  expect(gw.gw.deps.config.auditRetentionDays).toBe(0)
  expect(await startLogRetention({ pruneLogs: (b, n) => store.audit.prune(b, n) }, 0).run()).toBe(0)
  expect(await startLogRetention({ pruneLogs: (b, n) => store.audit.prune(b, n) }, 365).run()).toBe(1)
  const after = await everything()
  expect(after.map((e) => e.id)).toEqual(before.filter((e) => e.org !== 'ancient').map((e) => e.id))
})
