// Registering upstream MCP servers (PRODUCT §20): the admin API, the CLI and the config file; secrets
// are write-only and sealed on disk.

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { createSqliteStore } from '../../src/store/sqlite'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

setDefaultTimeout(60_000)

const dir = mkdtempSync(join(tmpdir(), 'gw-mcp-reg-'))
let gw: TestGateway
beforeAll(async () => {
  gw = await startTestGateway()
})
afterAll(async () => {
  await gw.stop()
  rmSync(dir, { recursive: true, force: true })
})

const put = (name: string, body: unknown, org = 'default') => gw.admin('PUT', `/orgs/${org}/mcp-servers/${name}`, body)

describe('admin API', () => {
  test('a server is registered, shown without its secrets, listed, replaced and deleted', async () => {
    const res = await put('search', { url: 'http://127.0.0.1:9/mcp', headers: { 'x-team': 'secret-team-header' }, auth: { kind: 'bearer', token: 'bearer-secret-123456' } })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).not.toContain('bearer-secret-123456')
    expect(text).not.toContain('secret-team-header')
    expect(JSON.parse(text)).toEqual({
      name: 'search',
      url: 'http://127.0.0.1:9/mcp',
      headers: ['x-team'],
      auth: { kind: 'bearer', token: '****' },
      enabled: true,
      updatedAt: expect.any(String),
    })
    // A key in the URL's query is masked too, in the answer and in the audit log.
    const keyed = await put('keyed', { url: 'http://127.0.0.1:9/mcp?apikey=QUERY-SECRET-0123&team=a' })
    expect(((await keyed.json()) as { url: string }).url).toBe('http://127.0.0.1:9/mcp?apikey=****&team=****')
    expect(await (await gw.admin('GET', '/audit?action=mcp-server.set')).text()).not.toContain('QUERY-SECRET-0123')
    await gw.admin('DELETE', '/orgs/default/mcp-servers/keyed')
    const one = await gw.admin('GET', '/orgs/default/mcp-servers/search')
    expect(one.status).toBe(200)
    expect(await one.text()).not.toContain('bearer-secret')
    expect((await put('github', { url: 'https://example.com/mcp', auth: { kind: 'oauth', scope: 'repo' }, enabled: false })).status).toBe(200)
    const list = (await (await gw.admin('GET', '/orgs/default/mcp-servers')).json()) as { data: { name: string; auth: { kind: string }; enabled: boolean }[] }
    expect(list.data.map((s) => [s.name, s.auth.kind, s.enabled])).toEqual([
      ['github', 'oauth', false],
      ['search', 'bearer', true],
    ])
    expect((await gw.admin('DELETE', '/orgs/default/mcp-servers/github')).status).toBe(204)
    expect((await gw.admin('DELETE', '/orgs/default/mcp-servers/github')).status).toBe(404)
    expect((await gw.admin('GET', '/orgs/default/mcp-servers/github')).status).toBe(404)
    expect((await put('x', { url: 'http://127.0.0.1:9/mcp' }, 'no-such-org')).status).toBe(404)
  })

  test.each([
    ['Bad', { url: 'http://127.0.0.1:9/mcp' }, /Invalid MCP server name/],
    ['a__b', { url: 'http://127.0.0.1:9/mcp' }, /Invalid MCP server name/],
    ['ok', { url: 'ftp://x/mcp' }, /url/],
    ['ok', { url: 'http://user:pw@x/mcp' }, /credentials/],
    ['ok', { url: 'http://x/mcp', auth: { kind: 'bearer' } }, /token/],
    ['ok', { url: 'http://x/mcp', auth: { kind: 'bearer', token: 't' }, headers: { Authorization: 'x' } }, /gw sets it itself/],
    ['ok', { url: 'http://x/mcp', headers: { 'mcp-session-id': 'x' } }, /gw sets it itself/],
  ])('a bad registration is a 400 naming what is wrong (%s %#)', async (name, body, why) => {
    const res = await put(name, body)
    expect(res.status).toBe(400)
    const err = (await res.json()) as { error: boolean; message: string; requestId: string }
    expect(err).toMatchObject({ error: true, requestId: res.headers.get('x-gw-request-id') })
    expect(err.message).toMatch(why)
  })

  test('without the admin token: 401', async () => {
    const res = await fetch(`${gw.url}/admin/orgs/default/mcp-servers`, { headers: { authorization: `Bearer ${gw.key}` } })
    expect(res.status).toBe(401)
  })
})

const main = join(import.meta.dir, '../../src/main.ts')
function cli(stdin: string, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args, '--json'], {
    env: { PATH: process.env.PATH ?? '', GW_DB: join(dir, 'cli.db'), GW_SECRET: 'cli-test-secret-0123456789abcdefghijkl' },
    stdin: new TextEncoder().encode(stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

test('CLI: gw mcp set (bearer secret from stdin) / list / remove; the secret is sealed on disk', () => {
  const set = cli('cli-bearer-secret-987654\n', 'mcp', 'set', 'search', '--url', 'http://127.0.0.1:9/mcp', '--auth', 'bearer', '--token', '-', '--header', 'x-team=blue')
  expect(set.err).toBe('')
  expect(JSON.parse(set.out)).toMatchObject({ name: 'search', auth: { kind: 'bearer', token: '****' }, headers: ['x-team'] })
  expect(cli('', 'mcp', 'set', 'bad', '--url', 'http://x/mcp', '--auth', 'bearer', '--token', 'visible').err).toContain('takes no value on the command line')
  expect(JSON.parse(cli('', 'mcp', 'list').out).data.map((s: { name: string }) => s.name)).toEqual(['search'])
  const disk = ['cli.db', 'cli.db-wal'].map((f) => { try { return readFileSync(join(dir, f)).toString('latin1') } catch { return '' } }).join('')
  expect(disk).toContain('mcp_servers')
  expect(disk).not.toContain('cli-bearer-secret-987654')
  expect(disk).not.toContain('x-team=blue')
  expect(cli('', 'mcp', 'remove', 'search').code).toBe(0)
  const again = cli('', 'mcp', 'remove', 'search')
  expect(again.code).toBe(1)
  expect(again.err).toContain('No MCP server "search"')
})

test('config file: mcpServers are applied at start, a bearer secret from the environment', async () => {
  const path = join(dir, 'gw.yaml')
  writeFileSync(path, `mcpServers:\n  search:\n    url: http://127.0.0.1:9/mcp\n    auth: {kind: bearer, tokenEnv: GW_TEST_MCP_TOKEN}\norgs:\n  acme:\n    mcpServers:\n      github: {url: 'https://example.com/mcp', auth: {kind: oauth}}\n`)
  process.env.GW_TEST_MCP_TOKEN = 'env-bearer-secret'
  const g = await startTestGateway({}, { GW_CONFIG: path })
  try {
    const d = (await (await g.admin('GET', '/orgs/default/mcp-servers')).json()) as { data: { name: string; auth: { kind: string } }[] }
    expect(d.data).toEqual([expect.objectContaining({ name: 'search', auth: { kind: 'bearer', token: '****' } })])
    const a = (await (await g.admin('GET', '/orgs/acme/mcp-servers')).json()) as { data: { name: string }[] }
    expect(a.data.map((s) => s.name)).toEqual(['github'])
    expect((await g.gw.deps.store.mcp.getServers('default'))[0]?.auth).toEqual({ kind: 'bearer', token: 'env-bearer-secret' })
  } finally {
    await g.stop()
  }
})

test('CLI: gw key create --mcp-allow/--mcp-deny sets the key\'s tool policy', () => {
  const made = cli('', 'key', 'create', '--name', 'agent', '--mcp-allow', 'github__*,search__query', '--mcp-deny', 'github__delete_*')
  expect(made.err).toBe('')
  const { id } = JSON.parse(made.out) as { id: string }
  const db = new Database(join(dir, 'cli.db'), { readonly: true })
  try {
    const row = db.query<{ spec: string }, [string]>('SELECT spec FROM mcp_key_policies WHERE key_id = ?1').get(id)
    expect(JSON.parse(row?.spec ?? 'null')).toEqual({ allowedTools: ['github__*', 'search__query'], deniedTools: ['github__delete_*'] })
  } finally {
    db.close()
  }
})

test("CLI: gw mcp users lists who authorised gw at an OAuth server; gw mcp forget withdraws a user's tokens", async () => {
  expect(cli('', 'mcp', 'set', 'crm', '--url', 'https://crm.example/mcp', '--auth', 'oauth', '--scope', 'read').code).toBe(0)
  // A grant as the OAuth callback leaves it, written through the store on the same database file.
  const store = createSqliteStore(join(dir, 'cli.db'), new SecretBox('cli-test-secret-0123456789abcdefghijkl'))
  await store.mcp.putUserTokens('default', 'crm', 'alice', JSON.stringify({ tokens: { access_token: 'alice-access-token-xyz', token_type: 'Bearer' } }))
  await store.close()
  const users = cli('', 'mcp', 'users', 'crm')
  expect(JSON.parse(users.out)).toEqual({ data: [{ endUser: 'alice', authorised: true, updatedAt: expect.any(String) }] })
  expect(users.out).not.toContain('alice-access-token-xyz')
  expect(cli('', 'mcp', 'forget', 'crm', '--user', 'alice').code).toBe(0)
  const again = cli('', 'mcp', 'forget', 'crm', '--user', 'alice')
  expect(again.code).toBe(1)
  expect(again.err).toContain('gw holds nothing for "alice"')
})
