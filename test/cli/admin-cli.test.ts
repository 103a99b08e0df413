// The admin subcommands of the `gw` binary, run as a user would, on a database file.

import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PolicyBody } from '../../src/schemas/admin-bodies'
import { startFake } from '../fakes/upstream'

// Each test spawns gw several times; on a loaded machine one spawn can take a second or more.
setDefaultTimeout(60_000)

const dir = mkdtempSync(join(tmpdir(), 'gw-cli-'))
const db = join(dir, 'gw.db')
const main = join(import.meta.dir, '../../src/main.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs gw with --json (machine output); `text` runs it as typed, for the tables. */
function gw(...args: string[]) {
  return gwWith({}, undefined, ...args, '--json')
}

/** gw as typed (tables). */
function text(...args: string[]) {
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

  const prov = gwWith({}, 'sk-cli-secret-0000001234\n', 'provider', 'set', 'openai', '--org', 'acme', '--api-key', '-', '--json')
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
  const fromEnv = gwWith({ MISTRAL_API_KEY: 'mi-from-env-00009876' }, undefined, 'provider', 'set', 'mistral', '--org', 'acme', '--json')
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

test('OpenAI-compatible providers from the CLI: a preset with its key from the environment, any other name with --base-url', () => {
  const groq = gwWith({ GROQ_API_KEY: 'gsk-from-env-000056789' }, undefined, 'provider', 'set', 'groq', '--org', 'acme', '--json')
  expect(groq.code).toBe(0)
  expect(groq.json()).toMatchObject({ provider: 'groq', kind: 'openai-compatible', baseUrl: 'https://api.groq.com/openai/v1', apiKey: 'gsk…6789' })
  expect(groq.out).not.toContain('gsk-from-env')
  const own = gw('provider', 'set', 'my-llm', '--org', 'acme', '--base-url', 'http://10.0.0.5:8000/v1')
  expect(own.code).toBe(0)
  expect(own.json()).toMatchObject({ provider: 'my-llm', kind: 'openai-compatible', baseUrl: 'http://10.0.0.5:8000/v1' })
  const noUrl = gw('provider', 'set', 'my-other', '--org', 'acme')
  expect(noUrl.code).toBe(1)
  expect(noUrl.err).toContain('baseUrl is required')
})

test('bad input: a clear message and a non-zero exit', () => {
  const dup = gw('org', 'create', '--name', 'Acme', '--id', 'acme')
  expect(dup.code).toBe(1)
  expect(dup.err).toContain('already exists')
  const missing = gw('provider', 'set', 'openai', '--org', 'acme')
  expect(missing.code).toBe(1)
  expect(missing.err).toContain('--api-key -')
  const unknown = text('frobnicate')
  expect(unknown.code).toBe(2)
  expect(unknown.err).toContain('unknown command "frobnicate"')
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
  // A signing secret is never taken from the command line (it would show in `ps`); from stdin it is.
  const inArgv = gw('secret', 'create', '--org', 'acme', '--secret', 'abcdefghijklmnopqrstuvwxyz0123456789')
  expect(inArgv.code).toBe(1)
  expect(inArgv.err).toContain('--secret takes no value on the command line')
  const fromStdin = gwWith({}, 'abcdefghijklmnopqrstuvwxyz0123456789\n', 'secret', 'create', '--org', 'acme', '--kid', 'stdin-1', '--secret', '-', '--json')
  expect(fromStdin.code).toBe(0)
  expect(JSON.parse(fromStdin.out)).toMatchObject({ kid: 'stdin-1', secret: 'abcdefghijklmnopqrstuvwxyz0123456789' })
  const short = gwWith({}, 'short\n', 'secret', 'create', '--org', 'acme', '--secret', '-')
  expect(short.code).toBe(1)
  expect(short.err).toContain('secret')
  const long = gw('token', 'sign', '--org', 'acme', '--sub', 'u1', '--ttl', '90000')
  expect(long.code).toBe(1)
  expect(long.err).toContain('ttl')
  const oidc = gw('oidc', 'set', '--org', 'acme', '--issuer', 'https://id.example.com', '--audience', 'gw')
  expect(oidc.json()).toMatchObject({ issuer: 'https://id.example.com', audience: 'gw', jwksUri: null, orgClaim: null })
  const limited = gw('key', 'create', '--org', 'acme', '--rpm', '5', '--tpm', '5000').json()
  const shown = gw('org', 'show', '--org', 'acme')
  expect(shown.json()).toMatchObject({ oidc: { issuer: 'https://id.example.com' } })
  expect(shown.json().signingSecrets.map((x: { kid: string }) => x.kid).sort()).toEqual(['cli-1', 'stdin-1'])
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

test('unknown flags and subcommands are errors naming them, before anything is done', () => {
  const orgs = () => gw('org', 'list').json().data.length
  const before = orgs()
  const bogus = text('org', 'create', '--name', 'X', '--id', 'bogus-org', '--bogus', '1')
  expect(bogus.code).toBe(2)
  expect(bogus.err).toContain('unknown flag "--bogus" for "gw org create"')
  expect(bogus.err).toContain('usage: gw org create --name NAME')
  expect(orgs()).toBe(before)
  const sub = text('org', 'frobnicate')
  expect(sub.code).toBe(2)
  expect(sub.err).toContain('unknown subcommand "org frobnicate"')
  expect(sub.err).toContain('gw org list')
  for (const argv of [['serve', '--prot', '8795'], ['--prot', '8795']]) {
    const serve = Bun.spawnSync([process.execPath, main, ...argv], { env: { PATH: process.env.PATH ?? '', GW_DB: db, GW_PORT: '0' }, stderr: 'pipe', timeout: 10_000 })
    expect(serve.exitCode).toBe(2)
    expect(serve.stderr.toString()).toContain('unknown flag "--prot" for "gw serve"')
  }
  const extra = text('serve', 'now')
  expect(extra.code).toBe(2)
  expect(extra.err).toContain('unexpected argument "now"')
  // Configuration flags are accepted by every command.
  expect(text('org', 'list', '--db', db).code).toBe(0)
  // A command that takes no org says nothing of --org; a command's missing NAME is asked for first.
  const listExtra = text('org', 'list', 'extra')
  expect(listExtra.err).toContain('unexpected argument "extra" for "gw org list"')
  expect(listExtra.err).not.toContain('--org)')
  expect(text('key', 'list', 'acme').err).toContain('(an org is given with --org)')
  expect(text('route', 'set', '--targets', 'openai/gpt-4o').err).toContain('which route name?')
  expect(text('prompt', 'version').err).toContain('which prompt? (slug or id)')
})

test('--help on every command and noun, --version', () => {
  const version = text('--version')
  expect(version.code).toBe(0)
  expect(version.out.trim()).toMatch(/^gw \d+\.\d+\.\d+/)
  const all = text('--help')
  for (const noun of ['org', 'key', 'secret', 'prompt', 'policy', 'provider', 'oidc', 'token', 'partial']) {
    const help = text(noun, '--help')
    expect(help.code).toBe(0)
    expect(help.out).toContain(`gw ${noun} `)
    expect(all.out).toContain(`gw ${noun} `)
  }
  // Every command line of the help: its leading words (`org create`, `provider key add`, `usage`).
  const commands = [...all.out.matchAll(/^ {2}gw ([a-z]+(?: [a-z][a-z-]*){0,2})(?= |$)/gm)].map((m) => m[1] as string)
  expect(commands.length).toBeGreaterThan(20)
  expect(commands).toContain('provider key add')
  for (const command of commands) {
    const help = text(...command.split(' '), '--help')
    expect(help.code).toBe(0)
    expect(help.out).toStartWith(`usage: gw ${command}`)
  }
  expect(text('serve', '--help').out).toContain('--port')
}, 180_000) // one spawn per command (about a second each on a loaded machine)

test('--help of every admin command lists each flag it takes on a line of its own, saying what it does', () => {
  const all = text('--help')
  const commands = [...all.out.matchAll(/^ {2}gw ([a-z]+(?: [a-z][a-z-]*){0,2})(?= |$)/gm)].map((m) => m[1] as string)
  let checked = 0
  for (const command of commands.filter((c) => !['healthcheck', 'migrate'].includes(c))) {
    const help = text(...command.split(' '), '--help').out
    const [usage = '', ...rest] = help.split('\n\n')
    const flags = new Set([...usage.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1] as string))
    for (const flag of flags) {
      expect(`${command}: ${rest.join('\n').match(new RegExp(`^  --${flag} +\\S.*$`, 'm'))?.[0] !== undefined}`).toBe(`${command}: true`)
      checked++
    }
    // A flag the help lists is one the command accepts (never a line for something it refuses).
    for (const m of rest.join('\n').matchAll(/^ {2}--([a-z][a-z0-9-]*) /gm)) expect(flags.has(m[1] as string) || ['json', 'help'].includes(m[1] as string)).toBe(true)
  }
  expect(checked).toBeGreaterThan(60)
}, 180_000) // one spawn per command (about a second each on a loaded machine)

test('gw policy set --help lists every field of the policy schema with its type', () => {
  const help = text('policy', 'set', '--help').out
  for (const field of Object.keys(PolicyBody.properties)) expect(help).toMatch(new RegExp(`^  ${field} +\\S`, 'm'))
  expect(help).toMatch(/^ {2}maxTokens +integer ≥ 1$/m)
  expect(help).toMatch(/^ {2}budgets +list of \{scope: org\|key\|endUser, usd: number > 0 and ≤ 1000000000, period: day\|month\|total\}/m)
})

test('org, key, secret and prompt listings print tables by default and JSON with --json', () => {
  gw('org', 'create', '--name', 'Listing Co', '--id', 'listing')
  const key = gw('key', 'create', '--org', 'listing', '--name', 'backend').json()
  const orgTable = text('org', 'list')
  expect(orgTable.code).toBe(0)
  const [header, ...rows] = orgTable.out.trim().split('\n')
  expect(header?.split(/\s+/)).toEqual(['id', 'name', 'createdAt'])
  expect(rows.some((r) => /^listing\s+Listing Co\s+\d{4}-/.test(r))).toBe(true)
  expect(gw('org', 'list').json().data).toContainEqual(expect.objectContaining({ id: 'listing', name: 'Listing Co' }))

  const keyTable = text('key', 'list', '--org', 'listing')
  expect(keyTable.out).toMatch(new RegExp(`^${key.id}\\s+backend\\s`, 'm'))
  expect(keyTable.out).not.toContain(key.key)
  expect(gw('key', 'list', '--org', 'listing').json().data).toEqual([expect.objectContaining({ id: key.id, name: 'backend', revokedAt: null })])

  gw('secret', 'create', '--org', 'listing', '--kid', 'list-kid')
  expect(text('secret', 'list', '--org', 'listing').out).toMatch(/^list-kid\s+\d{4}-/m)
  gw('prompt', 'create', '--org', 'listing', '--slug', 'hello')
  expect(gw('prompt', 'list', '--org', 'listing').json().data).toEqual([expect.objectContaining({ slug: 'hello', currentVersion: null })])
  expect(text('prompt', 'list', '--org', 'listing').out).toMatch(/^\S+\s+hello\s/m)
  // A created key is one record: printed as field/value lines, the key included (it is shown only here).
  const made = text('key', 'create', '--org', 'listing')
  expect(made.out).toMatch(/^key\s+gw_sk_\S+$/m)
  // policy set keeps its own --json value, and still takes the output switch.
  expect(gw('policy', 'set', '--org', 'listing', '--json', '{"maxTokens":5}').json()).toEqual({ maxTokens: 5 })
  expect(text('policy', 'set', '--org', 'listing', '--json', '{"maxTokens":6}').out).toMatch(/^maxTokens\s+6$/m)
})

test('gw logs list and gw logs show read the request log written by a running gateway', () => {
  // The previous test sent two requests through a gateway on this database.
  const page = gw('logs', 'list').json()
  expect(page.data.length).toBeGreaterThanOrEqual(2)
  const [newest] = page.data as { requestId: string; model: string }[]
  const table = text('logs', 'list', '--limit', '1')
  expect(table.code).toBe(0)
  expect(table.out).toMatch(new RegExp(`^\\S+\\s+200\\s+openai/gpt-4o\\s.*${newest?.requestId}$`, 'm'))
  expect(table.out).toContain('older entries: --cursor ')
  expect(gw('logs', 'list', '--provider', 'anthropic').json().data).toEqual([])
  expect(gw('logs', 'list', '--status', 'error').json().data).toEqual([])
  const shown = gw('logs', 'show', newest?.requestId as string).json()
  expect(shown).toMatchObject({ requestId: newest?.requestId, attempts: [{ outcome: 'ok' }] })
  expect(text('logs', 'show', newest?.requestId as string).out).toMatch(/^attempts:\n/m)
  const missing = gw('logs', 'show', 'nope')
  expect(missing.code).toBe(1)
  expect(missing.err).toContain('No log entry "nope"')
  expect(gw('logs', 'list', '--limit', '0').err).toContain('Invalid limit')
})

test('gw provider set --file sets a record of any kind as the admin API takes it (a file, or stdin), its secrets never printed', () => {
  expect(gw('org', 'create', '--name', 'Kinds', '--id', 'kinds').code).toBe(0)
  const secret = 'cLiBeDrOcKsEcReT/K7MDENG/bPxRfiCYEXAMPLE0'
  const file = join(dir, 'bedrock.json')
  writeFileSync(file, JSON.stringify({ kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIACLIBEDROCK000001', secretAccessKey: secret }), { mode: 0o600 })
  const bedrock = gw('provider', 'set', 'aws', '--org', 'kinds', '--file', file)
  expect(bedrock.code).toBe(0)
  expect(bedrock.json()).toMatchObject({ provider: 'aws', kind: 'bedrock', region: 'eu-west-1', auth: 'sigv4' })
  const azureKey = 'azure-cli-key-0123456789abcdef'
  const azure = gwWith({}, JSON.stringify({ kind: 'azure', baseUrl: 'https://acme.openai.azure.com', apiKey: azureKey, apiVersion: '2024-10-21', deployments: { 'gpt-4o': 'prod' } }), 'provider', 'set', 'az', '--org', 'kinds', '--file', '-', '--disabled', '--json')
  expect(azure.code).toBe(0)
  expect(azure.json()).toMatchObject({ provider: 'az', kind: 'azure', deployments: { 'gpt-4o': 'prod' }, enabled: false })
  for (const r of [bedrock, azure]) for (const s of [secret, azureKey]) expect(r.out + r.err).not.toContain(s)
  const shown = text('org', 'show', '--org', 'kinds')
  expect(shown.out).toContain('aws')
  expect(shown.out).not.toContain(secret)
  const bad = gw('provider', 'set', 'aws', '--org', 'kinds', '--file', join(dir, 'missing.json'))
  expect(bad.code).not.toBe(0)
})
