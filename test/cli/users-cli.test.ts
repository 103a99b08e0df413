// `gw user …`, `gw audit` and the service-key lifecycle flags of `gw key`, run as a user would, on a database file (PRODUCT §18).

import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Each test spawns gw several times; on a loaded machine one spawn can take a second or more.
setDefaultTimeout(90_000)

const dir = mkdtempSync(join(tmpdir(), 'gw-users-cli-'))
const main = join(import.meta.dir, '../../src/main.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function gw(stdin: string | undefined, ...args: string[]) {
  return gwWith({}, stdin, ...args)
}

function gwWith(env: Record<string, string>, stdin: string | undefined, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args], {
    env: { PATH: process.env.PATH ?? '', GW_DB: join(dir, 'gw.db'), GW_PORT: '9999', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    ...(stdin === undefined ? {} : { stdin: Buffer.from(stdin) }),
  })
  const out = p.stdout.toString()
  return { code: p.exitCode, out, err: p.stderr.toString(), json: () => JSON.parse(out) as Record<string, any> }
}

test('users: create (with a first-sign-in link), list, set-role, set-password from stdin, token, remove; each change audited as the CLI', () => {
  const made = gw(undefined, 'user', 'create', '--email', 'Ada@Example.com', '--role', 'admin', '--orgs', 'default', '--json')
  expect(made.code).toBe(0)
  expect(made.json()).toMatchObject({ email: 'ada@example.com', role: 'admin', orgs: ['default'], hasPassword: false })
  expect(made.json().signInLink).toMatch(/^http:\/\/127\.0\.0\.1:9999\/ui\/#first-sign-in=[\w-]{32}$/)
  // The link is where the dashboard is: GW_PUBLIC_URL, else the admin listener when it has its own port.
  const link = (env: Record<string, string>) => gwWith(env, undefined, 'user', 'link', 'ada@example.com', '--json').json().signInLink as string
  expect(link({ GW_PUBLIC_URL: 'https://gw.example.com' })).toStartWith('https://gw.example.com/ui/#first-sign-in=')
  expect(link({ GW_ADMIN_PORT: '9998', GW_ADMIN_TOKEN: 'an-admin-token-of-enough-length-0123456789' })).toStartWith('http://127.0.0.1:9998/ui/#first-sign-in=')
  expect(gw(undefined, 'user', 'create', '--email', 'ada@example.com', '--role', 'viewer').err).toContain('already exists')
  expect(gw(undefined, 'user', 'create', '--email', 'x@example.com', '--role', 'root').err).toContain('role')

  const listed = gw(undefined, 'user', 'list')
  expect(listed.code).toBe(0)
  expect(listed.out).toContain('ada@example.com')

  expect(gw(undefined, 'user', 'set-role', 'ada@example.com', '--role', 'viewer', '--json').json()).toMatchObject({ role: 'viewer', orgs: ['default'] })
  const inArgv = gw(undefined, 'user', 'set-password', 'ada@example.com', '--password', 'hunter2hunter2')
  expect(inArgv.code).toBe(1)
  expect(inArgv.err).toContain('takes no value on the command line')
  expect(gw('a long enough password\n', 'user', 'set-password', 'ada@example.com', '--password', '-').code).toBe(0)
  const token = gw(undefined, 'user', 'token', 'ada@example.com', '--name', 'ci', '--json')
  expect(token.json().token).toMatch(/^gw_at_/)
  const shown = gw(undefined, 'user', 'show', 'ada@example.com', '--json').json()
  expect(shown).toMatchObject({ email: 'ada@example.com', tokens: [{ id: token.json().id, name: 'ci', lastUsedAt: null }] })
  expect(JSON.stringify(shown)).not.toContain(token.json().token)
  expect(gw(undefined, 'user', 'revoke-token', 'ada@example.com', '--json').err).toContain('which token?')
  expect(gw(undefined, 'user', 'revoke-token', 'ada@example.com', 'at_nosuchtoken', '--json').err).toContain('has no token')
  expect(gw(undefined, 'user', 'revoke-token', 'ada@example.com', token.json().id, '--json').json()).toEqual({ revoked: token.json().id })
  expect(gw(undefined, 'user', 'show', 'ada@example.com', '--json').json().tokens).toEqual([])

  const audit = gw(undefined, 'audit', '--action', 'user.', '--json').json() as { data: { action: string; actor: { kind: string } }[] }
  expect(audit.data.map((e) => e.action)).toEqual(['user.token.delete', 'user.token.create', 'user.password.set', 'user.update', ...Array(3).fill('user.sign-in-link.create'), 'user.create'])
  expect(audit.data.every((e) => e.actor.kind === 'cli')).toBe(true)
  expect(JSON.stringify(audit)).not.toContain(token.json().token)
  expect(JSON.stringify(audit)).not.toContain('a long enough password')

  expect(gw(undefined, 'user', 'remove', 'ada@example.com').code).toBe(0)
  expect(gw(undefined, 'user', 'list', '--json').json().data).toEqual([])
})

test('keys: --expires, --endpoints and --models on create; rotate with --grace', () => {
  const made = gw(undefined, 'key', 'create', '--name', 'ci', '--expires', '2099-01-01T00:00:00Z', '--endpoints', '/v1/chat/completions', '--models', 'openai/*,anthropic/*', '--json').json()
  const listed = (gw(undefined, 'key', 'list', '--json').json().data as Record<string, unknown>[]).find((k) => k.id === made.id)
  expect(listed).toMatchObject({ name: 'ci', expiresAt: '2099-01-01T00:00:00.000Z', scopes: { endpoints: ['/v1/chat/completions'], models: ['openai/*', 'anthropic/*'] } })
  const rotated = gw(undefined, 'key', 'rotate', made.id, '--grace', '60', '--json').json()
  expect(rotated.key).toMatch(/^gw_sk_/)
  expect(Date.parse(rotated.oldKeyExpiresAt) - Date.now()).toBeWithin(40_000, 60_001)
  const after = gw(undefined, 'key', 'list', '--json').json().data as Record<string, unknown>[]
  expect(after.find((k) => k.id === rotated.id)).toMatchObject({ name: 'ci', expiresAt: '2099-01-01T00:00:00.000Z', scopes: { models: ['openai/*', 'anthropic/*'] } })
  expect(after.find((k) => k.id === made.id)).toMatchObject({ expiresAt: rotated.oldKeyExpiresAt })
})

test("GW_TOKEN: the CLI acts as the personal admin token's user, with its role and orgs, and the audit log names that user", () => {
  expect(gw(undefined, 'org', 'create', '--id', 'other', '--name', 'Other').code).toBe(0)
  const tokenOf = (email: string, role: string) => {
    expect(gw(undefined, 'user', 'create', '--email', email, '--role', role, '--orgs', 'default').code).toBe(0)
    return gw(undefined, 'user', 'token', email, '--json').json().token as string
  }
  const viewer = tokenOf('vic@example.com', 'viewer')
  const admin = tokenOf('adam@example.com', 'admin')
  const as = (token: string, ...args: string[]) => gwWith({ GW_TOKEN: token }, undefined, ...args)

  // A viewer reads its orgs, changes nothing, reads no other org, and only its own user.
  expect(as(viewer, 'key', 'list').code).toBe(0)
  const change = as(viewer, 'key', 'create', '--name', 'x')
  expect(change.code).toBe(1)
  expect(change.err).toContain('A viewer changes nothing')
  expect(as(viewer, 'key', 'list', '--org', 'other').err).toContain('no role in org "other"')
  expect(as(viewer, 'user', 'list').err).toContain('Only an owner')
  expect(as(viewer, 'user', 'show', 'vic@example.com').code).toBe(0)
  expect(as(viewer, 'user', 'show', 'adam@example.com').err).toContain('Only an owner may do this for another user')
  // An admin changes its orgs, as itself in the audit log.
  const made = as(admin, 'key', 'create', '--name', 'by-adam', '--json')
  expect(made.code).toBe(0)
  expect(as(admin, 'org', 'create', '--id', 'third').err).toContain('Only an owner')
  const audit = gw(undefined, 'audit', '--action', 'service-key.create', '--json').json() as { data: { actor: { kind: string; email?: string } }[] }
  expect(audit.data[0]?.actor).toMatchObject({ kind: 'user', email: 'adam@example.com' })
  // A token that is not one, or revoked: refused before anything runs.
  const bad = as('gw_at_notatokenatallnotatokenatallnotatokenatall0', 'key', 'list')
  expect(bad.code).toBe(1)
  expect(bad.err).toContain('GW_TOKEN is not a valid personal admin token')
  expect(bad.err).not.toContain('notatoken')
})
