// Saved prompts end to end: the repo's prompt files, version selectors, coercion, partials, overrides, streaming, log fields.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'

const REPO_PROMPTS = join(import.meta.dir, '../../prompts')
let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral }, { GW_PROMPTS_DIR: REPO_PROMPTS })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await mistral.stop()
})

const run = (ref: string, body: unknown = {}, query = '', headers: Record<string, string> = {}) =>
  gw.fetch(`/v1/prompts/${ref}/run${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** What the last request to the fake carried. */
const lastSent = (fake: FakeUpstream = openai) => fake.requests.at(-1)?.body as Record<string, any>
const userText = (fake?: FakeUpstream) => lastSent(fake).messages.at(-1).content as string

async function expectError(res: Response, status: number, message: RegExp) {
  expect(res.status).toBe(status)
  const body = (await res.json()) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, code: 'gateway_error', requestId: res.headers.get('x-gw-request-id') })
  expect(body.message as string).toMatch(message)
}

/** A prompt in the default org with the given versions (the last `publish`ed one is published). */
async function makePrompt(slug: string, versions: object[]) {
  const created = await gw.admin('POST', '/orgs/default/prompts', { slug, name: slug })
  expect(created.status).toBe(201)
  const { id } = (await created.json()) as { id: string }
  for (const v of versions) expect((await gw.admin('POST', `/orgs/default/prompts/${slug}/versions`, { model: 'openai/gpt-4o-mini', ...v })).status).toBe(201)
  return id
}

describe('the repo’s prompts/ folder', () => {
  test('is loaded at start: prompts published, partials stored; a second load adds no versions', async () => {
    expect(gw.gw.prompts).toMatchObject({ prompts: 4, partials: 2, skipped: [] })
    const shown = (await (await gw.admin('GET', '/orgs/default/prompts/summarize')).json()) as Record<string, any>
    expect(shown).toMatchObject({ slug: 'summarize', name: 'Summarize a text', publishedVersion: 1, currentVersion: 1 })
    expect(shown.versions[0]).toMatchObject({ model: 'openai/gpt-4o-mini', temperature: 0.3, maxTokens: 400 })
    const { loadPromptFiles, readPromptFiles } = await import('../../src/prompts/prompt-files')
    const again = await loadPromptFiles(gw.gw.deps.store, gw.gw.admin.prompts, (await readPromptFiles(REPO_PROMPTS, false)) ?? [])
    expect(again).toMatchObject({ prompts: 4, partials: 2, newVersions: 0, published: 0, skipped: [] })
    const after = (await (await gw.admin('GET', '/orgs/default/prompts/summarize')).json()) as Record<string, any>
    expect(after.versions.length).toBe(1)
  })

  test('runs by slug: partial expanded into the system message, variables coerced, prompt settings sent', async () => {
    const res = await run('summarize', { variables: { text: 'Cats sleep a lot.', max_words: '12' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-model')).toBe('openai/gpt-4o-mini')
    expect(res.headers.get('x-gw-auth-mode')).toBe('GwKey')
    expect(((await res.json()) as Record<string, unknown>).object).toBe('chat.completion')
    const sent = lastSent()
    expect(sent.model).toBe('gpt-4o-mini')
    expect(sent.temperature).toBe(0.3)
    expect(sent.max_tokens ?? sent.max_completion_tokens).toBe(400)
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You summarize texts for busy readers. Be concise and factual: do not add anything that is not in the input.' },
      { role: 'user', content: 'Summarize the following text in at most 12 words.\n\nText:\nCats sleep a lot.' },
    ])
    expect(sent.metadata).toBeUndefined()
  })

  test('runs by UUID; the log entry carries prompt id, slug and version', async () => {
    const { id } = (await (await gw.admin('GET', '/orgs/default/prompts/classify-sentiment')).json()) as { id: string }
    const res = await run(id, { variables: { message: 'love it', labels: '["positive","negative"]' }, metadata: { team: 'cx' }, user: 'u-9' })
    expect(res.status).toBe(200)
    expect(userText()).toContain('one of the labels ["positive","negative"]')
    const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(entry).toMatchObject({
      endpoint: '/v1/prompts/run',
      promptId: id,
      promptSlug: 'classify-sentiment',
      promptVersion: 1,
      metadata: { team: 'cx' },
      user: 'u-9',
      endUserId: 'u-9',
      status: 200,
    })
  })
})

describe('version selectors', () => {
  let id: string
  beforeAll(async () => {
    id = await makePrompt('greet', [
      { userTemplate: 'v1 hello {{name}}', publish: true },
      { userTemplate: 'v2 hello {{name}}' },
    ])
    await makePrompt('draft-only', [{ userTemplate: 'draft' }])
  })
  test('published by default, current, a number; by slug and UUID', async () => {
    expect((await run('greet', { variables: { name: 'Ann' } })).status).toBe(200)
    expect(userText()).toBe('v1 hello Ann')
    expect((await run('greet', { variables: { name: 'Ann' } }, '?version=published')).status).toBe(200)
    expect(userText()).toBe('v1 hello Ann')
    expect((await run(id, { variables: { name: 'Bo' } }, '?version=current')).status).toBe(200)
    expect(userText()).toBe('v2 hello Bo')
    expect((await run('greet', { variables: { name: 'Cy' } }, '?version=1')).status).toBe(200)
    expect(userText()).toBe('v1 hello Cy')
  })
  test('publishing another version changes what runs by default', async () => {
    expect((await gw.admin('POST', '/orgs/default/prompts/greet/versions/2/publish')).status).toBe(200)
    expect((await run('greet', { variables: { name: 'Di' } })).status).toBe(200)
    expect(userText()).toBe('v2 hello Di')
    expect((await gw.admin('POST', '/orgs/default/prompts/greet/versions/9/publish')).status).toBe(404)
  })
  test('404 for an unknown prompt, a missing version, an unpublished prompt; 200 with current', async () => {
    const sent = openai.requests.length
    await expectError(await run('no-such-prompt'), 404, /Prompt "no-such-prompt" not found/)
    await expectError(await run('greet', {}, '?version=7'), 404, /has no version 7/)
    await expectError(await run('draft-only'), 404, /no published version/)
    await expectError(await run('greet', {}, '?version=latest'), 400, /Invalid version/)
    expect(openai.requests.length).toBe(sent)
    expect((await run('draft-only', {}, '?version=current')).status).toBe(200)
    expect(userText()).toBe('draft')
  })
})

describe('variables are coerced to their declared type (the seed’s table)', () => {
  beforeAll(async () => {
    await makePrompt('types', [
      {
        userTemplate: 's={{s}} n={{n}} b={{b}} j={{j}} extra={{extra}}',
        variables: [
          { name: 's', type: 'string' },
          { name: 'n', type: 'number' },
          { name: 'b', type: 'boolean' },
          { name: 'j', type: 'json' },
        ],
        publish: true,
      },
    ])
  })
  const rendered = async (variables: Record<string, unknown>) => {
    const res = await run('types', { variables })
    expect(res.status).toBe(200)
    return userText()
  }
  test('string: any string, inserted as is (no HTML escaping)', async () => {
    expect(await rendered({ s: '<b>"Tom" & Jerry</b>' })).toStartWith('s=<b>"Tom" & Jerry</b> n= ')
  })
  test('number: a number or a numeric string', async () => {
    expect(await rendered({ n: 5 })).toContain(' n=5 ')
    expect(await rendered({ n: '2.5' })).toContain(' n=2.5 ')
    expect(await rendered({ n: ' 10 ' })).toContain(' n=10 ')
    await expectError(await run('types', { variables: { n: 'ten' } }), 400, /Variable "n" must be a number/)
    await expectError(await run('types', { variables: { n: '' } }), 400, /Variable "n" must be a number/)
  })
  test('boolean: true/false, "true"/"false", "1"/"0", "yes"/"no"', async () => {
    const rows: [unknown, boolean][] = [[true, true], [false, false], ['true', true], ['false', false], ['1', true], ['0', false], ['yes', true], ['no', false]]
    for (const [given, want] of rows) expect(await rendered({ b: given })).toContain(` b=${want} `)
    await expectError(await run('types', { variables: { b: 'maybe' } }), 400, /Variable "b" must be a boolean/)
  })
  test('json: a JSON string, or any object or array; inserted as compact JSON', async () => {
    expect(await rendered({ j: '{ "a": [1, 2] }' })).toContain(' j={"a":[1,2]} ')
    expect(await rendered({ j: { a: { b: true } } })).toContain(' j={"a":{"b":true}} ')
    expect(await rendered({ j: [1, 'x'] })).toContain(' j=[1,"x"] ')
    // The JSON text of a string is a string in JSON: compact JSON text keeps its quotes.
    expect(await rendered({ j: '"plain"' })).toContain(' j="plain" ')
    expect(await rendered({ j: ' 42 ' })).toContain(' j=42 ')
    await expectError(await run('types', { variables: { j: '{not json' } }), 400, /Variable "j" must be a json/)
  })
  test('missing optional variables are empty; undeclared ones are inserted as given', async () => {
    expect(await rendered({ extra: 'hi' })).toBe('s= n= b= j= extra=hi')
  })
  test('a required variable missing is a 400 naming it; so is an invalid variable name', async () => {
    await expectError(await run('summarize', { variables: {} }), 400, /Missing required variable "text"/)
    await expectError(await run('types', { variables: { 'bad-name': 1 } }), 400, /Invalid variable name "bad-name"/)
    await expectError(await run('types', { variables: [] }), 400, /variables/)
  })
})

describe('partials', () => {
  beforeAll(async () => {
    const partials: Record<string, string> = {
      sig: 'Regards, {{name}}',
      letter: 'Dear {{to}}, {{> sig}}',
      c1: 'one {{> c2}}',
      c2: 'two {{> c1}}',
    }
    for (let i = 1; i <= 10; i++) partials[`d${i}`] = i < 10 ? `${i}-{{> d${i + 1}}}` : 'bottom'
    for (const [name, template] of Object.entries(partials))
      expect((await gw.admin('PUT', `/orgs/default/partials/${name}`, { template })).status).toBe(200)
    await makePrompt('letter', [{ userTemplate: '{{> letter}} [{{> missing}}] {{note}}', publish: true }])
    await makePrompt('cyclic', [{ userTemplate: 'start {{> c1}}', publish: true }])
    await makePrompt('deep', [{ userTemplate: '{{> d1}}', publish: true }])
    await makePrompt('deep-ok', [{ userTemplate: '{{> d3}}', publish: true }])
  })
  test('partials expand first (nested), so their variable tokens are filled; a missing partial is empty', async () => {
    expect((await run('letter', { variables: { to: 'Ann', name: 'Bo', note: 'ok' } })).status).toBe(200)
    expect(userText()).toBe('Dear Ann, Regards, Bo [] ok')
  })
  test('tags inside variable values are not expanded', async () => {
    expect((await run('letter', { variables: { to: '{{> sig}}', name: '{{note}}', note: 'n' } })).status).toBe(200)
    expect(userText()).toBe('Dear {{> sig}}, Regards, {{note}} [] n')
  })
  test('a cycle is a clear 400; so is nesting deeper than 8', async () => {
    await expectError(await run('cyclic'), 400, /Partials form a cycle: c1 → c2 → c1/)
    await expectError(await run('deep'), 400, /nested deeper than 8 levels: d1 → d2 → .* → d9/)
    expect((await run('deep-ok')).status).toBe(200)
    expect(userText()).toBe('3-4-5-6-7-8-9-bottom')
  })
})

test('overrides: top-level max_tokens/temperature beat the prompt, overrides beat both, overrides.model reroutes', async () => {
  expect((await run('summarize', { variables: { text: 't' }, temperature: 0.5, max_tokens: 100 })).status).toBe(200)
  expect(lastSent()).toMatchObject({ temperature: 0.5, max_tokens: 100 })
  const both = { variables: { text: 't' }, temperature: 0.5, max_tokens: 100, overrides: { temperature: 0.9, max_tokens: 50 } }
  expect((await run('summarize', both)).status).toBe(200)
  expect(lastSent()).toMatchObject({ temperature: 0.9, max_tokens: 50 })
  const res = await run('summarize', { ...both, overrides: { model: 'mistral/mistral-small-latest', max_tokens: 60 } })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-model')).toBe('mistral/mistral-small-latest')
  expect(lastSent(mistral)).toMatchObject({ model: 'mistral-small-latest', temperature: 0.5, max_tokens: 60 })
  await expectError(await run('summarize', { variables: { text: 't' }, temperature: 3 }), 400, /temperature/)
  await expectError(await run('summarize', { variables: { text: 't' }, overrides: { model: 'nope' } }), 400, /provider\/model-name/)
})

test('a run without a body (empty or blank) is a run with no variables, logged with the body {}; the log writer stays healthy', async () => {
  await makePrompt('no-body', [{ userTemplate: 'Say hi', publish: true }])
  for (const body of ['', '  \n']) {
    const res = await gw.fetch('/v1/prompts/no-body/run', { method: 'POST', body })
    expect(res.status).toBe(200)
    expect(userText()).toBe('Say hi')
    const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(entry).toMatchObject({ status: 200, promptSlug: 'no-body', requestBody: {} })
  }
  // A 400 without a body (a required variable missing) is logged as well.
  await makePrompt('no-body-needs', [{ userTemplate: 'Hi {{name}}', variables: [{ name: 'name', type: 'string', required: true }], publish: true }])
  const refused = await gw.fetch('/v1/prompts/no-body-needs/run', { method: 'POST' })
  expect(refused.status).toBe(400)
  expect(await gw.log(refused.headers.get('x-gw-request-id') as string)).toMatchObject({ status: 400, requestBody: {} })
  // What is logged after them is written too.
  const after = await run('no-body')
  expect((await gw.log(after.headers.get('x-gw-request-id') as string)).status).toBe(200)
  const health = (await (await gw.fetch('/health')).json()) as any
  expect(health.status).toBe('ok')
})

test('a streamed run answers in the chat-completions SSE shape and is logged with its prompt', async () => {
  const res = await run('translate', { variables: { text: 'Hallo', target_language: 'English', formal: 'yes' }, stream: true })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/event-stream')
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  expect((events[0] as Record<string, unknown>).object).toBe('chat.completion.chunk')
  expect(userText()).toBe('Translate into English (formal register: true):\n\nHallo')
  const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(entry).toMatchObject({ stream: true, promptSlug: 'translate', promptVersion: 1, status: 200 })
})

test('runs go through the same policy as chat (here: required metadata)', async () => {
  await gw.admin('PUT', '/orgs/default/policy', { requiredMetadata: ['team'] })
  try {
    const res = await run('summarize', { variables: { text: 't' } })
    expect(res.status).toBe(403)
    expect(((await res.json()) as { code: string }).code).toBe('policy_violation')
    expect((await run('summarize', { variables: { text: 't' }, metadata: { team: 'a' } })).status).toBe(200)
  } finally {
    await gw.admin('PUT', '/orgs/default/policy', {})
  }
})

test('a signed token may run a prompt', async () => {
  const { secret, kid } = (await (await gw.admin('POST', '/orgs/default/signing-secrets', {})).json()) as { secret: string; kid: string }
  const { signToken } = await import('../../src/auth/signed-tokens')
  const token = await signToken({ orgId: 'default', kid, secret, createdAt: '' }, { sub: 'u1', orgId: 'default', ttl: 60 })
  const res = await run('summarize', { variables: { text: 't' } }, '', { authorization: `GwSigned ${token}` })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-auth-mode')).toBe('GwSigned')
})

test('prompt_id on a chat request links the log entry without applying the prompt', async () => {
  const { id } = (await (await gw.admin('GET', '/orgs/default/prompts/summarize')).json()) as { id: string }
  for (const [field, ref] of [['prompt_id', 'summarize'], ['x-gw-prompt-id', id]] as const) {
    const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'plain' }], [field]: ref })
    expect(res.status).toBe(200)
    expect(lastSent().messages).toEqual([{ role: 'user', content: 'plain' }])
    expect(lastSent()[field]).toBeUndefined()
    const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(entry).toMatchObject({ promptId: id, promptSlug: 'summarize', promptVersion: null })
  }
  const unknown = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], prompt_id: 'nope' })
  expect(unknown.status).toBe(200)
  expect(await gw.log(unknown.headers.get('x-gw-request-id') as string)).toMatchObject({ promptId: null, promptSlug: null })
})

test('admin API validation: slug pattern, duplicates, model, variable types', async () => {
  expect((await gw.admin('POST', '/orgs/default/prompts', { slug: 'Bad_Slug' })).status).toBe(400)
  expect((await gw.admin('POST', '/orgs/default/prompts', { slug: '-x' })).status).toBe(400)
  expect((await gw.admin('POST', '/orgs/default/prompts', { slug: 'summarize' })).status).toBe(409)
  const v = (body: object) => gw.admin('POST', '/orgs/default/prompts/greet/versions', { userTemplate: 'x', model: 'openai/gpt-4o', ...body })
  await expectError(await v({ model: 'gpt-4o' }), 400, /provider\/model-name/)
  await expectError(await v({ variables: [{ name: 'x', type: 'date' }] }), 400, /variables\/0\/type/)
  await expectError(await v({ variables: [{ name: 'x', type: 'string' }, { name: 'x', type: 'number' }] }), 400, /declared twice/)
  expect((await gw.admin('POST', '/orgs/default/prompts/nope/versions', { userTemplate: 'x', model: 'openai/gpt-4o' })).status).toBe(404)
})
