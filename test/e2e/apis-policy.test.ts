// The org's policy on /v1/messages, /v1/responses and /v1/embeddings: allowed models, blocked terms,
// required metadata (as x-gw-metadata), token limits — each refused in the endpoint's error shape,
// nothing sent upstream; the policy's output limit reaches a pass-through request that set none.

import { expect, test } from 'bun:test'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
const { fakes } = useAllProviders((s) => {
  gw = s.gw
})
const upstreamCalls = () => Object.values(fakes).reduce((n, f) => n + f.requests.length, 0)

async function org(policy: object): Promise<string> {
  const id = `apis-${Math.random().toString(36).slice(2, 8)}`
  await gw.admin('POST', '/orgs', { id, name: id })
  for (const [p, f] of Object.entries(fakes)) await gw.admin('PUT', `/orgs/${id}/providers/${p}`, { apiKey: f.apiKey, baseUrl: f.url })
  expect((await gw.admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  return ((await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }).key
}

const call = async (key: string, path: string, body: object, headers: Record<string, string> = {}) => {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, any> }
}

const messages = (content: string, extra: object = {}) => ({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content }], ...extra })
const TEAM = { 'x-gw-metadata': '{"team":"core"}' }

test('Messages: required metadata, blocked terms in system blocks, token limits and models, in Anthropic’s shape', async () => {
  const key = await org({ requiredMetadata: ['team'], blockedTerms: ['project-x'], maxTokens: 100, allowedModels: ['anthropic/claude-haiku*', 'openai/*'] })
  const before = upstreamCalls()
  const noTeam = await call(key, '/v1/messages', messages('hi'))
  expect(noTeam).toMatchObject({ status: 403, body: { type: 'error', error: { type: 'permission_error', code: 'policy_violation' } } })
  const blocked = await call(key, '/v1/messages', messages('hi', { system: [{ type: 'text', text: 'About Project-X.' }] }), TEAM)
  expect(blocked).toMatchObject({ status: 403, body: { error: { code: 'policy_violation' } } })
  const tooMany = await call(key, '/v1/messages', messages('hi', { max_tokens: 500 }), TEAM)
  expect(tooMany).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', code: 'token_limit_exceeded' } } })
  const model = await call(key, '/v1/messages', messages('hi', { model: 'claude-sonnet-4-6' }), TEAM)
  expect(model).toMatchObject({ status: 403, body: { error: { code: 'model_not_allowed' } } })
  expect(upstreamCalls()).toBe(before)
  expect((await call(key, '/v1/messages', messages('hi'), TEAM)).status).toBe(200)
})

test('Responses: blocked terms in input items; the org’s output limit is sent to OpenAI when the request sets none', async () => {
  const key = await org({ blockedTerms: ['project-x'], maxTokens: 64 })
  const blocked = await call(key, '/v1/responses', { model: 'openai/gpt-4o', input: [{ role: 'user', content: [{ type: 'input_text', text: 'project-x plans' }] }] })
  expect(blocked).toMatchObject({ status: 403, body: { error: { type: 'policy_violation', code: 'policy_violation' } } })
  const over = await call(key, '/v1/responses', { model: 'openai/gpt-4o', input: 'hi', max_output_tokens: 65 })
  expect(over).toMatchObject({ status: 400, body: { error: { code: 'token_limit_exceeded' } } })
  fakes.openai.reset()
  expect((await call(key, '/v1/responses', { model: 'openai/gpt-4o', input: 'hi' })).status).toBe(200)
  expect(fakes.openai.requests[0]?.body).toEqual({ model: 'gpt-4o', input: 'hi', max_output_tokens: 64 })
})

test('Responses: the body’s user is the end user, as on chat completions: in the log entry, and under an endUser budget', async () => {
  const post = (key: string, body: object) =>
    fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const open = await org({})
  const res = await post(open, { model: 'openai/gpt-4o', input: 'hi', user: 'frank' })
  expect(res.status).toBe(200)
  expect(await gw.log(res.headers.get('x-gw-request-id') as string, open)).toMatchObject({ endUserId: 'frank', user: 'frank' })
  const tight = await org({ budgets: [{ scope: 'endUser', usd: 0.0000001, period: 'day' }] })
  const before = upstreamCalls()
  const refused = await post(tight, { model: 'openai/gpt-4o', input: 'hi', max_output_tokens: 50, user: 'frank' })
  expect(refused.status).toBe(429)
  expect(((await refused.json()) as any).error).toMatchObject({ code: 'budget_exceeded' })
  expect(upstreamCalls()).toBe(before)
  expect((await post(tight, { model: 'openai/gpt-4o', input: 'hi', user: 'x'.repeat(257) })).status).toBe(400)
})

test('Embeddings: blocked terms in any input and required metadata, in gw’s shape', async () => {
  const key = await org({ blockedTerms: ['project-x'], requiredMetadata: ['team'] })
  const before = upstreamCalls()
  expect(await call(key, '/v1/embeddings', { model: 'openai/text-embedding-3-small', input: ['fine', 'project-X'] }, TEAM)).toMatchObject({
    status: 403,
    body: { error: true, code: 'policy_violation' },
  })
  expect(await call(key, '/v1/embeddings', { model: 'openai/text-embedding-3-small', input: 'fine' })).toMatchObject({ status: 403, body: { code: 'policy_violation' } })
  expect(upstreamCalls()).toBe(before)
  expect((await call(key, '/v1/embeddings', { model: 'openai/text-embedding-3-small', input: 'fine', metadata: { team: 'a' } })).status).toBe(200)
})

test('Budgets: a reservation that does not fit is 429 budget_exceeded in each endpoint’s shape', async () => {
  const key = await org({ budgets: [{ scope: 'org', usd: 0.0000001, period: 'day' }] })
  const before = upstreamCalls()
  const m = await call(key, '/v1/messages', messages('hi'))
  expect(m).toMatchObject({ status: 429, body: { type: 'error', error: { type: 'rate_limit_error', code: 'budget_exceeded' } } })
  const r = await call(key, '/v1/responses', { model: 'openai/gpt-4o', input: 'hi', max_output_tokens: 50 })
  expect(r).toMatchObject({ status: 429, body: { error: { type: 'budget_exceeded', code: 'budget_exceeded' } } })
  expect(upstreamCalls()).toBe(before)
})

test('An org’s route names work on the new endpoints, before the API’s own bare ids', async () => {
  expect((await gw.admin('PUT', '/orgs/default/routes/claude-sonnet-4-6', { targets: [{ model: 'mistral/mistral-small-latest' }], fallback: [{ model: 'openai/gpt-4o-mini' }] })).status).toBe(200)
  expect((await gw.admin('PUT', '/orgs/default/routes/embed', { targets: [{ model: 'google/gemini-embedding-001' }] })).status).toBe(200)
  try {
    fakes.mistral.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const m = await call(gw.key, '/v1/messages', messages('hi', { model: 'claude-sonnet-4-6' }))
    // The route's target failed; its own fallback answered, in Anthropic's form.
    expect(m).toMatchObject({ status: 200, body: { type: 'message', model: 'openai/gpt-4o-mini' } })
    expect(fakes.anthropic.requests).toHaveLength(0)
    const e = await call(gw.key, '/v1/embeddings', { model: 'embed', input: 'hi' })
    expect(e.status).toBe(200)
    expect(fakes.google.requests.at(-1)?.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents')
    const r = await call(gw.key, '/v1/responses', { model: 'gpt-4o-mini', input: 'hi' })
    expect(fakes.openai.requests.at(-1)?.path).toBe('/v1/responses')
    expect(r.status).toBe(200)
  } finally {
    await gw.admin('DELETE', '/orgs/default/routes/claude-sonnet-4-6')
    await gw.admin('DELETE', '/orgs/default/routes/embed')
  }
})

const COUNT = '/v1/messages/count_tokens'
const count = (model: string, content = 'Say hi please') => ({ model, messages: [{ role: 'user', content }] })

test('count_tokens, Anthropic-counted or estimated: the same model, metadata and blocked-term policy, in Anthropic’s shape', async () => {
  const key = await org({ allowedModels: ['anthropic/claude-haiku*', 'openai/gpt-4o'], blockedTerms: ['project-x'], requiredMetadata: ['team'] })
  const before = upstreamCalls()
  for (const model of ['claude-sonnet-4-6', 'openai/gpt-4o-mini'])
    expect(await call(key, COUNT, count(model), TEAM)).toMatchObject({ status: 403, body: { type: 'error', error: { code: 'model_not_allowed' } } })
  for (const model of ['claude-haiku-4-5', 'openai/gpt-4o']) {
    expect(await call(key, COUNT, count(model))).toMatchObject({ status: 403, body: { error: { type: 'permission_error', code: 'policy_violation' } } })
    expect(await call(key, COUNT, count(model, 'About Project-X'), TEAM)).toMatchObject({ status: 403, body: { error: { code: 'policy_violation' } } })
  }
  expect(upstreamCalls()).toBe(before)
  expect((await call(key, COUNT, count('claude-haiku-4-5'), TEAM)).status).toBe(200)
  expect((await call(key, COUNT, count('openai/gpt-4o'), TEAM)).status).toBe(200)
})

test('count_tokens counts against the request rate, shared with the other requests, on both paths', async () => {
  const key = await org({ requestsPerMinute: 3 })
  expect((await call(key, COUNT, count('claude-haiku-4-5'))).status).toBe(200)
  expect((await call(key, COUNT, count('openai/gpt-4o'))).status).toBe(200)
  expect((await call(key, '/v1/messages', messages('hi'))).status).toBe(200)
  for (const model of ['claude-haiku-4-5', 'openai/gpt-4o'])
    expect(await call(key, COUNT, count(model))).toMatchObject({ status: 429, body: { error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } } })
})

test('count_tokens is charged no tokens and no budget, and counts a prompt over the prompt limit; a message is still refused', async () => {
  const key = await org({ tokensPerMinute: 5, maxPromptTokens: 3, budgets: [{ scope: 'org', usd: 0.0000001, period: 'day' }] })
  const long = 'Count every word of this rather long prompt, please.'
  for (let i = 0; i < 3; i++)
    for (const model of ['claude-haiku-4-5', 'openai/gpt-4o']) {
      const res = await call(key, COUNT, count(model, long))
      expect(res.status).toBe(200)
      expect(res.body.input_tokens).toBeGreaterThan(5)
    }
  const refused = await call(key, '/v1/messages', messages(long))
  expect(refused).toMatchObject({ status: 400, body: { error: { code: 'token_limit_exceeded' } } })
})

test('Embeddings are screened on their inputs and counted as texts: no chat framing, no output limit', async () => {
  // "user" and "role" appear in no input: a request is refused for what it sends, not for a conversation gw made up.
  const key = await org({ blockedTerms: ['user', 'role'], maxTokens: 10, maxPromptTokens: 4 })
  const embed = (input: string | string[] | number[][], extra: object = {}) => call(key, '/v1/embeddings', { model: 'openai/text-embedding-3-small', input, ...extra })
  fakes.openai.reset()
  // Two inputs of two tokens each: 4 tokens, at the limit (each input is not a chat message with its framing).
  const ok = await embed(['hello world', 'good day'])
  expect(ok.status).toBe(200)
  // The org's output limit neither refuses nor fills anything: an embedding generates no text.
  expect(fakes.openai.requests[0]?.body).toEqual({ model: 'text-embedding-3-small', input: ['hello world', 'good day'] })
  expect((await embed('hello', { max_tokens: 500 })).status).toBe(200)
  expect(await embed(['fine', 'a user manual'])).toMatchObject({ status: 403, body: { code: 'policy_violation' } })
  expect(await embed(['hello world', 'good day again'])).toMatchObject({ status: 400, body: { code: 'token_limit_exceeded' } })
  // Token arrays are their own count.
  expect((await embed([[1, 2], [3, 4]])).status).toBe(200)
  expect(await embed([[1, 2, 3], [4, 5]])).toMatchObject({ status: 400, body: { code: 'token_limit_exceeded' } })
})

test('Embeddings usage a provider does not report is estimated from the input texts (about 4 characters a token)', async () => {
  const key = await org({})
  const inputs = ['hello world', 'a somewhat longer sentence to embed']
  const res = await call(key, '/v1/embeddings', { model: 'google/gemini-embedding-001', input: inputs })
  expect(res.status).toBe(200)
  const estimate = inputs.reduce((n, s) => n + Math.ceil(s.length / 4), 0)
  expect(res.body.usage).toEqual({ prompt_tokens: estimate, total_tokens: estimate })
})

test('count_tokens generates nothing: a huge max_tokens is counted, not refused, and output settings are not counted as prompt', async () => {
  const key = await org({ maxTokens: 100 })
  // (Anthropic's own count takes no max_tokens and says so; gw's estimate for other models reads the prompt only.)
  expect((await call(key, COUNT, count('claude-haiku-4-5'))).status).toBe(200)
  expect((await call(key, COUNT, { ...count('openai/gpt-4o'), max_tokens: 1_000_000 })).status).toBe(200)
  const plain = await call(key, COUNT, count('openai/gpt-4o'))
  const withSettings = await call(key, COUNT, { ...count('openai/gpt-4o'), max_tokens: 1_000_000, temperature: 0.5, stop_sequences: ['END'] })
  expect(plain.status).toBe(200)
  expect(withSettings.body.input_tokens).toBe(plain.body.input_tokens)
})
