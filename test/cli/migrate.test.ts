// `gw migrate` and `gw migrate --from <sqlite file>`: a single-node gateway's data moved into PostgreSQL, idempotent and resumable.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AdminService } from '../../src/admin/admin-service'
import { bootstrap, createFirstKey } from '../../src/admin/bootstrap'
import { loadConfig } from '../../src/config'
import { resolveSecret, SecretBox } from '../../src/crypto/secret-box'
import { createPostgresStore } from '../../src/store/postgres'
import { PG_MIGRATIONS } from '../../src/store/postgres/open'
import { createSqliteStore } from '../../src/store/sqlite'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway } from '../helpers/gateway'
import { logEntry } from '../helpers/log-entry'
import { freshSchema, serversFor, TEST_DATABASE_URL, TEST_SECRET } from '../helpers/servers'

const main = join(import.meta.dir, '../../src/main.ts')
const pgUp = await serversFor('gw migrate --from (PostgreSQL)', { postgres: true })

function gw(env: Record<string, string>, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const out = p.stdout.toString()
  return { code: p.exitCode, out, err: p.stderr.toString(), json: () => JSON.parse(out) as Record<string, any> }
}

describe.skipIf(!pgUp)('gw migrate --from', () => {
  let dir: string
  let file: string
  let schema: Awaited<ReturnType<typeof freshSchema>>
  let openai: FakeUpstream
  let serviceKey: string
  let adaToken: string
  let mcpKeyId: string
  const LOGS = 2500

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-migrate-'))
    file = join(dir, 'gw.db')
    schema = await freshSchema()
    openai = await startFake('openai')
    // A single-node gateway that never set GW_SECRET: its secrets are sealed with the gw.secret beside the file.
    const store = createSqliteStore(file, new SecretBox(resolveSecret(undefined, file)))
    const admin = new AdminService(store)
    const config = loadConfig({ GW_DB: file })
    await bootstrap(store, config)
    await createFirstKey(store, admin, config)
    await store.orgs.createOrg({ id: 'acme', name: 'Acme' })
    await store.orgs.putPolicy('acme', { requestsPerMinute: 7 })
    await store.orgs.putProvider('acme', { provider: 'openai', name: 'default', weight: 1, apiKey: openai.apiKey, baseUrl: openai.url, enabled: true })
    const moved = await admin.createServiceKey('acme', { name: 'moved' })
    serviceKey = moved.key
    // MCP servers (a bearer secret; an OAuth server with its registered client and one user's tokens) and a key's tool policy.
    await store.mcp.putServer('acme', { name: 'docs', url: 'https://mcp.example.com/mcp', headers: { 'x-team': 'blue' }, auth: { kind: 'bearer', token: 'mcp-bearer-secret' }, enabled: true })
    await store.mcp.putServer('acme', { name: 'crm', url: 'https://crm.example.com/mcp', headers: {}, auth: { kind: 'oauth' }, enabled: true })
    await store.mcp.putOAuthClient('acme', 'crm', '{"client_id":"gw-client"}')
    await store.mcp.putUserTokens('acme', 'crm', 'ada', '{"access_token":"ada-access"}')
    await store.mcp.putKeyPolicy('acme', moved.id, { deniedTools: ['crm__delete_*'] })
    mcpKeyId = moved.id
    await store.auth.addSigningSecret({ orgId: 'acme', kid: 'k1', secret: 'signing-secret-value' })
    const p = await store.prompts.createPrompt({ id: crypto.randomUUID(), orgId: 'acme', slug: 'greet', name: undefined })
    const content = { systemTemplate: undefined, userTemplate: 'Hi {{n}}', variables: [{ name: 'n', type: 'string' as const, required: true }], model: 'openai/gpt-4o', temperature: undefined, maxTokens: undefined }
    await store.prompts.addVersion(p.id, content, 'h1', true)
    await store.prompts.putPartial('acme', 'sig', '-- Acme')
    const ada = await admin.users.create({ email: 'ada@example.com', role: 'admin', orgs: ['acme'] })
    await admin.users.setPassword(ada.id, { password: 'a password that moves' })
    adaToken = (await admin.users.createToken(ada.id)).token
    await store.logs.insertLogs(Array.from({ length: LOGS }, (_, i) => logEntry(i, { orgId: 'acme', requestBody: { i } })))
    await store.close()
  })
  afterAll(async () => {
    await openai.stop()
    await schema.drop()
    rmSync(dir, { recursive: true, force: true })
  })

  const env = () => ({ GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET })

  test('copies orgs, keys, secrets (re-sealed with GW_SECRET), prompts and logs; the moved key works on PostgreSQL', async () => {
    const r = gw(env(), 'migrate', '--from', file)
    expect(r.err).toBe('')
    expect(r.code).toBe(0)
    expect(r.json()).toMatchObject({
      database: 'postgres',
      applied: PG_MIGRATIONS.map((_, i) => i + 1),
      imported: { copied: { orgs: 2, provider_keys: 1, service_keys: 2, signing_secrets: 1, prompts: 1, prompt_versions: 1, prompt_partials: 1, users: 1, admin_tokens: 1, audit_log: 5, mcp_servers: 2, mcp_user_tokens: 1, mcp_key_policies: 1 }, logsRead: LOGS },
    })
    const store = createPostgresStore(schema.url, new SecretBox(TEST_SECRET))
    await store.whenReady
    expect(await store.orgs.getOrg('acme')).toMatchObject({ policy: { requestsPerMinute: 7 } })
    expect((await store.orgs.getProviders('acme'))[0]?.apiKey).toBe(openai.apiKey)
    expect((await store.auth.listSigningSecrets('acme'))[0]?.secret).toBe('signing-secret-value')
    expect((await store.prompts.findPrompt('acme', 'greet'))?.publishedVersion).toBe(1)
    expect(await store.logs.countLogs('acme')).toBe(LOGS)
    // MCP servers with their sealed parts opened under the new secret.
    expect(await store.mcp.getServers('acme')).toMatchObject([
      { name: 'crm', auth: { kind: 'oauth' } },
      { name: 'docs', headers: { 'x-team': 'blue' }, auth: { kind: 'bearer', token: 'mcp-bearer-secret' } },
    ])
    expect(await store.mcp.getOAuthClient('acme', 'crm')).toBe('{"client_id":"gw-client"}')
    expect(await store.mcp.getUserTokens('acme', 'crm', 'ada')).toBe('{"access_token":"ada-access"}')
    expect(await store.mcp.getKeyPolicy(mcpKeyId)).toEqual({ deniedTools: ['crm__delete_*'] })
    expect(await store.logs.getLog('acme', logEntry(42).requestId)).toEqual(logEntry(42, { orgId: 'acme', requestBody: { i: 42 } }))
    // Users keep their role, password and tokens; the audit log keeps its entries in order, and grows after them.
    const moved = new AdminService(store)
    expect(await moved.users.checkPassword('ada@example.com', 'a password that moves')).toMatchObject({ role: 'admin', orgs: ['acme'] })
    expect(await moved.users.userOfToken(adaToken)).toMatchObject({ email: 'ada@example.com' })
    const before = (await store.audit.query({ limit: 500 })).data
    expect(before.map((e) => e.action)).toEqual(['user.token.create', 'user.password.set', 'user.create', 'service-key.create', 'service-key.create'])
    await moved.createOrg({ id: 'after', name: 'After' })
    expect((await store.audit.query({ limit: 1 })).data[0]?.action).toBe('org.create')
    await store.close()
    const pg = await startTestGateway({}, { GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET, GW_SERVICE_KEY: 'gw_sk_only-for-bootstrap-of-this-test-000000' })
    try {
      const res = await pg.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `GwKey ${serviceKey}` })
      expect(res.status).toBe(200)
      expect(((await res.json()) as { model: string }).model).toBe('openai/gpt-4o')
    } finally {
      await pg.stop()
    }
  })

  test('running it again changes nothing; an interrupted log copy resumes after its last batch', async () => {
    const again = gw(env(), 'migrate', '--from', file)
    expect(again.code).toBe(0)
    expect(again.json()).toMatchObject({ applied: [], imported: { copied: { orgs: 0, service_keys: 0, prompt_versions: 0, users: 0, audit_log: 0, mcp_servers: 0, mcp_user_tokens: 0 }, logsRead: 0 } })
    // Interrupted after 1,000 entries: the position says so and the rest is missing.
    const sql = new SQL(schema.url, { max: 1 })
    const cut = logEntry(999)
    await sql`DELETE FROM request_logs WHERE org_id = 'acme' AND created_at > ${Date.parse(cut.createdAt)}`
    await sql`UPDATE gw_sqlite_imports SET created_at = ${Date.parse(cut.createdAt)}, request_id = ${cut.requestId}`
    const resumed = gw(env(), 'migrate', '--from', file)
    expect(resumed.json()).toMatchObject({ imported: { logsRead: LOGS - 1000 } })
    expect(Number((await sql`SELECT count(*) AS n FROM request_logs WHERE org_id = 'acme'`)[0].n)).toBe(LOGS)
    expect(Number((await sql`SELECT count(DISTINCT request_id) AS n FROM request_logs`)[0].n)).toBe(Number((await sql`SELECT count(*) AS n FROM request_logs`)[0].n))
    await sql.close()
  })

  test('without GW_DATABASE_URL, --from is refused with a clear message', () => {
    const r = gw({ GW_DB: join(dir, 'other.db') }, 'migrate', '--from', file)
    expect(r.code).not.toBe(0)
    expect(r.err).toContain('set GW_DATABASE_URL')
  })
})

describe.skipIf(!pgUp)('gw migrate (no --from)', () => {
  test('runs the migrations without GW_SECRET (it seals nothing); --from still needs it', async () => {
    const schema = await freshSchema()
    try {
      const r = gw({ GW_DATABASE_URL: schema.url }, 'migrate')
      expect(r.err).toBe('')
      expect(r.code).toBe(0)
      expect(r.json()).toEqual({ database: 'postgres', applied: PG_MIGRATIONS.map((_, i) => i + 1) })
      const from = gw({ GW_DATABASE_URL: schema.url }, 'migrate', '--from', '/nonexistent/gw.db')
      expect(from.code).toBe(1)
      expect(from.err).toContain('GW_SECRET must be set with GW_DATABASE_URL')
    } finally {
      await schema.drop()
    }
  })

  test('a database that does not exist is named in one line (exit 1), with the host but no password', () => {
    const url = new URL(TEST_DATABASE_URL)
    url.password = 'not-a-real-password-4d1c'
    url.pathname = '/gw_no_such_database'
    const r = gw({ GW_DATABASE_URL: url.toString() }, 'migrate')
    expect(r.code).toBe(1)
    expect(r.err.trim().split('\n')).toHaveLength(1)
    expect(r.err).toContain(`database "gw_no_such_database" does not exist on ${url.hostname}:${url.port || '5432'}`)
    expect(r.err).not.toContain('not-a-real-password-4d1c')
  })
})
