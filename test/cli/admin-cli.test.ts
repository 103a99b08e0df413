// The admin subcommands of the `gw` binary, run as a user would, on a database file.

import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake } from '../fakes/upstream'

const dir = mkdtempSync(join(tmpdir(), 'gw-cli-'))
const db = join(dir, 'gw.db')
const main = join(import.meta.dir, '../../src/main.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function gw(...args: string[]) {
  return gwWith({}, undefined, ...args)
}

/** The CLI with extra environment variables and, optionally, text on stdin. */
function gwWith(env: Record<string, string>, stdin: string | undefined, ...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args], {
    env: { PATH: process.env.PATH ?? '', GW_DB: db, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    ...(stdin === undefined ? {} : { stdin: Buffer.from(stdin) }),
  })
  const out = p.stdout.toString()
  return { code: p.exitCode, out, err: p.stderr.toString(), json: () => JSON.parse(out) as Record<string, any> }
}

test('org, provider, policy and key commands work on the configured database', async () => {
  const org = gw('org', 'create', '--name', 'Acme', '--id', 'acme')
  expect(org.code).toBe(0)
  expect(org.json()).toEqual({ id: 'acme', name: 'Acme' })

  const prov = gwWith({}, 'sk-cli-secret-0000001234\n', 'provider', 'set', 'openai', '--org', 'acme', '--api-key', '-')
  expect(prov.code).toBe(0)
  expect(prov.json()).toMatchObject({ provider: 'openai', apiKey: 'sk-…1234', enabled: true })
  expect(prov.out).not.toContain('sk-cli-secret')

  const policyFile = join(dir, 'policy.json')
  writeFileSync(policyFile, JSON.stringify({ allowedModels: ['openai/*'] }))
  expect(gw('policy', 'set', '--org', 'acme', '--file', policyFile).json()).toEqual({ allowedModels: ['openai/*'] })

  const key = gw('key', 'create', '--org', 'acme', '--name', 'deploy')
  expect(key.code).toBe(0)
  const { id, key: secret } = key.json()
  expect(secret).toMatch(/^gw_sk_/)

  const shown = gw('org', 'show', '--org', 'acme')
  expect(shown.json()).toMatchObject({ id: 'acme', policy: { allowedModels: ['openai/*'] }, serviceKeys: [{ id, name: 'deploy', revokedAt: null }] })
  expect(shown.out).not.toContain(secret)

  expect(gw('key', 'revoke', id, '--org', 'acme').code).toBe(0)
  expect(gw('org', 'show', '--org', 'acme').json().serviceKeys[0].revokedAt).toBeTruthy()
})

test('secrets never on the command line: provider keys from stdin or the environment, the admin token from stdin', () => {
  const literal = gw('provider', 'set', 'openai', '--org', 'acme', '--api-key', 'sk-visible-in-ps-0000')
  expect(literal.code).toBe(1)
  expect(literal.err).toMatch(/other users see it in `ps`/)
  expect(literal.err).not.toContain('sk-visible-in-ps')
  const fromEnv = gwWith({ MISTRAL_API_KEY: 'mi-from-env-00009876' }, undefined, 'provider', 'set', 'mistral', '--org', 'acme')
  expect(fromEnv.code).toBe(0)
  expect(fromEnv.json()).toMatchObject({ provider: 'mistral', apiKey: 'mi-…9876' })
  const none = gw('provider', 'set', 'anthropic', '--org', 'acme')
  expect(none.code).toBe(1)
  expect(none.err).toContain('ANTHROPIC_API_KEY')
  const token = gw('org', 'show', '--admin-token', 'token-visible-in-ps-0123')
  expect(token.code).toBe(1)
  expect(token.err).toMatch(/--admin-token -/)
  expect(gwWith({}, 'token-from-stdin-0123456789\n', 'org', 'show', '--admin-token', '-').code).toBe(0)
})

test('bad input: a clear message and a non-zero exit', () => {
  const dup = gw('org', 'create', '--name', 'Acme', '--id', 'acme')
  expect(dup.code).toBe(1)
  expect(dup.err).toContain('already exists')
  const missing = gw('provider', 'set', 'openai', '--org', 'acme')
  expect(missing.code).toBe(1)
  expect(missing.err).toContain('--api-key -')
  const unknown = gw('frobnicate')
  expect(unknown.code).toBe(2)
  expect(unknown.err).toContain('unknown command')
  const badConfig = Bun.spawnSync([process.execPath, main, 'org', 'show'], { env: { GW_DB: db, GW_PORT: 'x' }, stderr: 'pipe' })
  expect(badConfig.exitCode).toBe(1)
  expect(badConfig.stderr.toString()).toContain('GW_PORT')
})

test('signing secrets, OIDC config, key limits and token signing from the CLI', () => {
  const none = gw('token', 'sign', '--org', 'acme', '--sub', 'u1')
  expect(none.code).toBe(1)
  expect(none.err).toContain('no signing secret')
  const secret = gw('secret', 'create', '--org', 'acme', '--kid', 'cli-1')
  expect(secret.code).toBe(0)
  expect(secret.json().kid).toBe('cli-1')
  expect(secret.json().secret.length).toBeGreaterThanOrEqual(32)
  const short = gw('secret', 'create', '--org', 'acme', '--secret', 'short')
  expect(short.code).toBe(1)
  expect(short.err).toContain('secret')
  const long = gw('token', 'sign', '--org', 'acme', '--sub', 'u1', '--ttl', '90000')
  expect(long.code).toBe(1)
  expect(long.err).toContain('ttl')
  const oidc = gw('oidc', 'set', '--org', 'acme', '--issuer', 'https://id.example.com', '--audience', 'gw')
  expect(oidc.json()).toMatchObject({ issuer: 'https://id.example.com', audience: 'gw', jwksUri: null, orgClaim: null })
  const limited = gw('key', 'create', '--org', 'acme', '--rpm', '5', '--tpm', '5000').json()
  const shown = gw('org', 'show', '--org', 'acme')
  expect(shown.json()).toMatchObject({ signingSecrets: [{ kid: 'cli-1' }], oidc: { issuer: 'https://id.example.com' } })
  expect(shown.json().serviceKeys.find((k: { id: string }) => k.id === limited.id)).toMatchObject({ requestsPerMinute: 5, tokensPerMinute: 5000 })
  expect(shown.out).not.toContain(secret.json().secret)
  expect(gw('secret', 'delete', 'cli-1', '--org', 'acme').code).toBe(0)
  expect(gw('secret', 'delete', 'cli-1', '--org', 'acme').code).toBe(1)
})

test('prompts and partials from the CLI, from flags and from a prompt file', () => {
  expect(gw('prompt', 'create', '--org', 'acme', '--slug', 'faq', '--name', 'FAQ').json()).toMatchObject({ slug: 'faq' })
  const v1 = gw('prompt', 'version', 'faq', '--org', 'acme', '--model', 'openai/gpt-4o', '--user-template', 'Q: {{q}}',
    '--variables', '[{"name":"q","type":"string","required":true}]', '--temperature', '0.2', '--publish')
  expect(v1.code).toBe(0)
  expect(v1.json()).toEqual({ version: 1, published: true })
  const promptFile = join(dir, 'faq.md')
  writeFileSync(promptFile, '---\nmodel: anthropic/claude-sonnet-4-5\nmax_tokens: 300\nsystem: Be brief.\n---\nQuestion: {{q}}\n')
  expect(gw('prompt', 'version', 'faq', '--org', 'acme', '--file', promptFile).json()).toEqual({ version: 2, published: false })
  expect(gw('prompt', 'publish', 'faq', '2', '--org', 'acme').json()).toMatchObject({ publishedVersion: 2 })
  expect(gw('partial', 'set', 'tone', '--org', 'acme', '--template', 'Friendly.').json()).toEqual({ name: 'tone', template: 'Friendly.' })
  const shown = gw('prompt', 'show', 'faq', '--org', 'acme').json()
  expect(shown).toMatchObject({ slug: 'faq', name: 'FAQ', publishedVersion: 2, currentVersion: 2 })
  expect(shown.versions[1]).toMatchObject({ model: 'anthropic/claude-sonnet-4-5', maxTokens: 300, systemTemplate: 'Be brief.', userTemplate: 'Question: {{q}}' })
  const bad = gw('prompt', 'version', 'faq', '--org', 'acme', '--model', 'gpt-4o', '--user-template', 'x')
  expect(bad.code).toBe(1)
  expect(bad.err).toContain('provider/model-name')
})

test('a key and a signed token made by the CLI work against a running gateway on the same database', async () => {
  const openai = await startFake('openai')
  const key = gw('key', 'create').json().key as string
  gw('secret', 'create')
  const signed = gw('token', 'sign', '--sub', 'cli-user', '--ttl', '300', '--end-user', 'eu-1').json()
  expect(signed.authorization).toBe(`GwSigned ${signed.token}`)
  const proc = Bun.spawn([process.execPath, main, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', GW_DB: db, GW_OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: openai.apiKey },
    stdout: 'pipe',
  })
  try {
    const reader = proc.stdout.getReader()
    let out = ''
    while (!/listening on (\S+)/.test(out)) out += new TextDecoder().decode((await reader.read()).value)
    const url = (/listening on (\S+)/.exec(out) as RegExpExecArray)[1]
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}` },
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(200)
    const viaToken = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: signed.authorization },
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(viaToken.status).toBe(200)
    expect(viaToken.headers.get('x-gw-auth-mode')).toBe('GwSigned')
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    await openai.stop()
  }
})
