// Org policy end to end: every rule with its status, code and headers, what reaches the upstream, and rate limits under concurrency.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway
let orgSeq = 0

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await mistral.stop()
})

const ask = (content = 'hi', extra: object = {}) => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], ...extra })

/** A fresh org with OpenAI and Mistral keys, the given policy and a service key; returns a chat function. */
async function orgWith(policy: object, keyBody: object = {}) {
  const id = `pol-${++orgSeq}`
  await gw.admin('POST', '/orgs', { id, name: id })
  for (const [p, f] of [['openai', openai], ['mistral', mistral]] as const)
    await gw.admin('PUT', `/orgs/${id}/providers/${p}`, { apiKey: f.apiKey, baseUrl: f.url })
  expect((await gw.admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, keyBody)).json()) as { key: string }
  const chat = async (body: object, k = key) => {
    const res = await gw.chat(body, { authorization: `GwKey ${k}` })
    const text = await res.text()
    return { res, status: res.status, body: JSON.parse(text.startsWith('data:') ? '{}' : text) as Record<string, any> }
  }
  return { id, key, chat, newKey: async (b: object = {}) => ((await (await gw.admin('POST', `/orgs/${id}/service-keys`, b)).json()) as { key: string }).key }
}

function expectError(r: { status: number; body: Record<string, any>; res: Response }, status: number, code: string, message: RegExp) {
  expect(r.status).toBe(status)
  expect(r.body).toMatchObject({ error: true, code, requestId: r.res.headers.get('x-gw-request-id') })
  expect(r.body.message).toMatch(message)
}

test('allowedModels globs and disabledProviders → 403 model_not_allowed, nothing sent upstream', async () => {
  const org = await orgWith({ allowedModels: ['openai/gpt-4o*', 'mistral/*'], disabledProviders: ['mistral'] })
  const sent = openai.requests.length + mistral.requests.length
  expectError(await org.chat(ask('hi', { model: 'openai/gpt-4.1' })), 403, 'model_not_allowed', /not in the allowed models/)
  expectError(await org.chat(ask('hi', { model: 'mistral/mistral-small-latest' })), 403, 'model_not_allowed', /disabled/)
  expect(openai.requests.length + mistral.requests.length).toBe(sent)
  expect((await org.chat(ask())).status).toBe(200)
})

test('maxTokens: over the limit is 400 token_limit_exceeded; without max_tokens the limit is sent upstream', async () => {
  const org = await orgWith({ maxTokens: 100 })
  expectError(await org.chat(ask('hi', { max_tokens: 101 })), 400, 'token_limit_exceeded', /101 exceeds the org's limit of 100/)
  expectError(await org.chat(ask('hi', { max_completion_tokens: 500 })), 400, 'token_limit_exceeded', /500/)
  expect((await org.chat(ask('hi', { max_tokens: 100 }))).status).toBe(200)
  expect((await org.chat(ask())).status).toBe(200)
  const sent = openai.requests.at(-1)?.body as Record<string, unknown>
  expect(sent.max_tokens ?? sent.max_completion_tokens).toBe(100)
})

test('maxPromptTokens counts with a real tokenizer (400 names the count)', async () => {
  const org = await orgWith({ maxPromptTokens: 60 })
  // 400 × "x" is 50 o200k tokens (57 with chat framing); characters/4 would say 100.
  expect((await org.chat(ask('x'.repeat(400)))).status).toBe(200)
  expectError(await org.chat(ask('x'.repeat(480))), 400, 'token_limit_exceeded', /The prompt has at least 67 tokens, over the org's limit of 60/)
  const tight = await orgWith({ maxPromptTokens: 9 })
  expect((await tight.chat(ask('hello world'))).status).toBe(200)
  expectError(await tight.chat(ask('hello world!')), 400, 'token_limit_exceeded', /has at least 10 tokens/)
})

test('allowStreaming, requiredMetadata and blockedTerms → 403 policy_violation', async () => {
  const org = await orgWith({ allowStreaming: false, requiredMetadata: ['team', 'env'], blockedTerms: ['Project Falcon'] })
  const md = { metadata: { team: 'a', env: 'prod' } }
  expectError(await org.chat(ask('hi', { ...md, stream: true })), 403, 'policy_violation', /Streaming is not allowed/)
  expectError(await org.chat(ask('hi', { metadata: { team: 'a' } })), 403, 'policy_violation', /Required metadata missing: "env"/)
  expectError(await org.chat(ask('what is project FALCON?', md)), 403, 'policy_violation', /blocked term/)
  const parts = ask('', md)
  parts.messages = [{ role: 'user', content: [{ type: 'text', text: 'about project falcon' }] } as never]
  expectError(await org.chat(parts), 403, 'policy_violation', /blocked term/)
  expect((await org.chat(ask('hi', md))).status).toBe(200)
})

test('maxTokens checks every output-limit field: a small max_completion_tokens cannot carry a large max_tokens past it', async () => {
  const org = await orgWith({ maxTokens: 100 })
  const sent = openai.requests.length + mistral.requests.length
  for (const model of ['openai/gpt-4o-mini', 'mistral/mistral-small-latest'])
    expectError(
      await org.chat({ ...ask('hi'), model, max_completion_tokens: 10, max_tokens: 5000 }),
      400,
      'token_limit_exceeded',
      /max_tokens 5000 exceeds the org's limit of 100/,
    )
  expectError(await org.chat(ask('hi', { max_tokens: 10, max_completion_tokens: 500 })), 400, 'token_limit_exceeded', /max_completion_tokens 500/)
  expect(openai.requests.length + mistral.requests.length).toBe(sent)
})

test('blockedTerms and maxPromptTokens see tool descriptions, tool arguments, the output schema and forwarded unknown fields', async () => {
  const org = await orgWith({ blockedTerms: ['Project Falcon'] })
  const sent = openai.requests.length
  const tool = (description: string) => ({ type: 'function', function: { name: 'f', description, parameters: { type: 'object' } } })
  const call = (args: string) => [
    { role: 'user', content: 'hi' },
    { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'ok' },
  ]
  const bodies = [
    ask('hi', { tools: [tool('look up project falcon')] }),
    { ...ask(), messages: call('{"q":"PROJECT FALCON"}') },
    ask('hi', { prediction: { type: 'content', content: 'project falcon' } }),
    ask('hi', { output_schema: { mode: 'json_schema', properties: { a: { type: 'string', description: 'Project Falcon' } } } }),
  ]
  for (const body of bodies) expectError(await org.chat(body), 403, 'policy_violation', /blocked term \("Project Falcon"\)/)
  expect(openai.requests.length).toBe(sent)
  expect((await org.chat(ask('hi', { tools: [tool('look up the weather')] }))).status).toBe(200)

  const counted = await orgWith({ maxPromptTokens: 50 })
  expect((await counted.chat(ask('hi', { tools: [tool('short')] }))).status).toBe(200)
  expectError(await counted.chat(ask('hi', { tools: [tool('many words '.repeat(100))] })), 400, 'token_limit_exceeded', /over the org's limit of 50/)
  expectError(await counted.chat({ ...ask(), messages: call(JSON.stringify({ q: 'x '.repeat(200) })) }), 400, 'token_limit_exceeded', /limit of 50/)
  expectError(await counted.chat(ask('hi', { prediction: { type: 'content', content: 'y '.repeat(200) } })), 400, 'token_limit_exceeded', /limit of 50/)
})

test('a policy change applies to the next request', async () => {
  const org = await orgWith({ allowStreaming: false })
  expect((await org.chat(ask('hi', { stream: true }))).status).toBe(403)
  await gw.admin('PUT', `/orgs/${org.id}/policy`, { allowStreaming: true })
  expect((await org.chat(ask('hi', { stream: true }))).status).toBe(200)
})

test('requestsPerMinute: the request over the limit is 429 with Retry-After; refused requests do not count', async () => {
  const org = await orgWith({ requestsPerMinute: 3, allowStreaming: false })
  expect((await org.chat(ask('hi', { stream: true }))).status).toBe(403)
  for (let i = 0; i < 3; i++) expect((await org.chat(ask())).status).toBe(200)
  const r = await org.chat(ask())
  expectError(r, 429, 'rate_limit_exceeded', /3 requests per minute/)
  const retry = Number(r.res.headers.get('retry-after'))
  expect(Number.isInteger(retry)).toBe(true)
  expect(retry).toBeGreaterThanOrEqual(59)
  expect(retry).toBeLessThanOrEqual(61)
  const entry = await gw.log(r.res.headers.get('x-gw-request-id') as string, org.key)
  expect(entry).toMatchObject({ status: 429, errorCode: 'rate_limit_exceeded' })
})

test('50 concurrent requests against 10 per minute: exactly 10 pass and reach the upstream', async () => {
  const org = await orgWith({ requestsPerMinute: 10 })
  const before = openai.requests.length
  const results = await Promise.all(Array.from({ length: 50 }, () => org.chat(ask())))
  const statuses = results.map((r) => r.status)
  expect(statuses.filter((s) => s === 200).length).toBe(10)
  expect(statuses.filter((s) => s === 429).length).toBe(40)
  expect(openai.requests.length - before).toBe(10)
  for (const r of results.filter((x) => x.status === 429)) expect(Number(r.res.headers.get('retry-after'))).toBeGreaterThan(0)
})

test('a service key’s own limit applies on top of the org’s; other keys are unaffected', async () => {
  const org = await orgWith({ requestsPerMinute: 100 }, { requestsPerMinute: 2 })
  const other = await org.newKey()
  expect((await org.chat(ask())).status).toBe(200)
  expect((await org.chat(ask())).status).toBe(200)
  expectError(await org.chat(ask()), 429, 'rate_limit_exceeded', /this service key: 2 requests per minute/)
  expect((await org.chat(ask(), other)).status).toBe(200)
})

test('tokensPerMinute counts the provider-reported usage of answered requests, and admits while the window is below the limit (PRODUCT §10)', async () => {
  const org = await orgWith({ tokensPerMinute: 1000 })
  openai.enqueue({ kind: 'reply', usage: { prompt: 600, completion: 300, cached: 0, thinking: 0 } })
  expect((await org.chat(ask())).status).toBe(200)
  // 900 counted, below the limit: a request estimated at ~400 prompt tokens is admitted.
  openai.enqueue({ kind: 'reply', usage: { prompt: 400, completion: 10, cached: 0, thinking: 0 } })
  expect((await org.chat(ask('y '.repeat(400)))).status).toBe(200)
  // 1,310 counted: none until the window is below the limit again.
  const refused = await org.chat(ask('hi'))
  expectError(refused, 429, 'rate_limit_exceeded', /1000 tokens per minute/)
  expect(Number(refused.res.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(Number(refused.res.headers.get('retry-after'))).toBeLessThanOrEqual(60)
  // A first request larger than the whole limit is admitted too: the window was empty.
  const small = await orgWith({ tokensPerMinute: 10 })
  expect((await small.chat(ask('a prompt of many more than ten tokens, as its estimate says '.repeat(3)))).status).toBe(200)
})
