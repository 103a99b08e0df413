// AWS Bedrock providers (PRODUCT §17, docs/providers.md "AWS Bedrock"): set through the admin API, chat JSON and
// streams over Converse/ConverseStream with every request SigV4-signed, tools, fallback, key failures, the secret kept.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

const SECRET = 'bEdRoCkSeCrEt/K7MDENG/bPxRfiCYEXAMPLEKEY'
const WRONG = 'wRoNgSeCrEt/K7MDENG/bPxRfiCYEXAMPLEKEY00'
const SESSION = 'FwoGZXIvYXdzEBYaDSESSIONTOKEN0123456789'
const API_KEY = 'ABSKQmVkcm9ja0FQSUtleS1FWEFNUExFMDEyMzQ1Njc4OQ'
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0'
const hello = [{ role: 'user', content: 'Say hi please' }]

let aws: FakeBedrock
let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  aws = startFakeBedrock({
    region: 'eu-west-1',
    keys: { AKIAFAKEBEDROCK0001: { secretAccessKey: SECRET }, ASIAFAKEBEDROCK0002: { secretAccessKey: SECRET, sessionToken: SESSION } },
    apiKeys: [API_KEY],
  })
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
  const put = await gw.admin('PUT', '/orgs/default/providers/bedrock', { region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: SECRET, baseUrl: aws.url })
  expect(put.status).toBe(200)
})
afterAll(async () => {
  await gw.stop()
  aws.stop()
  await openai.stop()
})

test('chat JSON: the Converse call is signed and names the model in its path; the answer, finish reason and usage (cache tokens too) in OpenAI terms', async () => {
  aws.plan({ kind: 'text', text: 'Hi there!' })
  const res = await gw.chat({ model: `bedrock/${MODEL}`, messages: [{ role: 'system', content: 'Be brief.' }, ...hello], temperature: 0.2, max_tokens: 40 })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  assertChatCompletion(body)
  expect(body.model).toBe(`bedrock/${MODEL}`)
  expect(body.choices[0].message.content).toBe('Hi there!')
  expect(body.choices[0].finish_reason).toBe('stop')
  expect(body.usage).toMatchObject({ prompt_tokens: 19, completion_tokens: 7, total_tokens: 26, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 3 } })
  const seen = aws.seen.at(-1)
  expect(seen?.signer).toBe('AKIAFAKEBEDROCK0001')
  expect(seen?.modelId).toBe(MODEL)
  expect(seen?.stream).toBe(false)
  expect(seen?.body).toEqual({ messages: [{ role: 'user', content: [{ text: 'Say hi please' }] }], system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 40, temperature: 0.2 } })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.provider).toBe('bedrock')
})

test("structured output on a model Bedrock refuses a forced tool choice for (Llama): asked in the system prompt with the schema, the answer's text checked; a required tool_choice relaxed to auto", async () => {
  aws.plan({ kind: 'text', text: '{"city":"Oslo"}' }, { kind: 'text', text: 'ok' })
  const llama = 'meta.llama3-3-70b-instruct-v1:0'
  const schema = { mode: 'json_schema', type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
  const res = await gw.chat({ model: `bedrock/${llama}`, messages: hello, output_schema: schema })
  expect(res.status).toBe(200)
  expect(((await res.json()) as Record<string, any>).choices[0]).toMatchObject({ message: { content: '{"city":"Oslo"}' }, finish_reason: 'stop' })
  const sent = aws.seen.at(-1)?.body as Record<string, any>
  expect(sent.toolConfig).toBeUndefined()
  expect(sent.system).toEqual([{ text: expect.stringContaining('"required":["city"]') }])
  expect((await gw.log(res.headers.get('x-gw-request-id') as string)).structuredOutput).toEqual({ parsed: true, matchesSchema: true })
  const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }]
  const relaxed = await gw.chat({ model: `bedrock/${llama}`, messages: hello, tools, tool_choice: 'required' })
  expect(relaxed.status).toBe(200)
  expect((aws.seen.at(-1)?.body as Record<string, any>).toolConfig.toolChoice).toEqual({ auto: {} })
  expect((await gw.log(relaxed.headers.get('x-gw-request-id') as string)).warnings).toEqual([expect.objectContaining({ type: 'param_relaxed', setting: 'tool_choice' })])
})

test("a priced model costs what the catalog's bedrock section says, an inference profile as its model: cache reads and writes at their own prices", async () => {
  aws.plan({ kind: 'text', text: 'Hi there!' }, { kind: 'text', text: 'Hi there!' })
  const profile = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
  const res = await gw.chat({ model: `bedrock/${profile}`, messages: hello })
  expect(res.status).toBe(200)
  expect(aws.seen.at(-1)?.modelId).toBe(profile)
  // 11 fresh input × $3 + 5 cache reads × $0.30 + 3 cache writes × $3.75 + 7 output × $15, per million tokens.
  const cost = (11 * 3 + 5 * 0.3 + 3 * 3.75 + 7 * 15) / 1e6
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBeCloseTo(cost, 12)
  const body = (await res.json()) as Record<string, any>
  expect(body.usage.cost_usd).toBeCloseTo(cost, 12)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.costUsd).toBeCloseTo(cost, 12)
  expect(log.priceVersion).toEqual(expect.any(String))
  // The model's own id is priced the same.
  const plain = await gw.chat({ model: `bedrock/${MODEL}`, messages: hello })
  expect(Number(plain.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
})

test('a stream: ConverseStream frames become chat chunks, with the finish reason and usage, then [DONE]', async () => {
  aws.plan({ kind: 'text', text: 'one two three', stopReason: 'max_tokens' })
  const res = await gw.chat({ model: `bedrock/${MODEL}`, messages: hello, stream: true, stream_options: { include_usage: true } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/event-stream')
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  const chunks = events.filter((e): e is Record<string, any> => e !== '[DONE]')
  for (const c of chunks) assertChatChunk(c)
  expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('one two three')
  expect(chunks.flatMap((c) => (c.choices[0]?.finish_reason ? [c.choices[0].finish_reason] : []))).toEqual(['length'])
  expect(chunks.find((c) => c.usage)?.usage).toMatchObject({ prompt_tokens: 19, completion_tokens: 7 })
  expect(aws.seen.at(-1)?.stream).toBe(true)
})

test('a ThrottlingException falls back to openai as a rate limit', async () => {
  aws.plan({ kind: 'error', status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' })
  const res = await gw.chat({ model: `bedrock/${MODEL}`, messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  expect(((await res.json()) as Record<string, any>).model).toBe('openai/gpt-4o-mini')
})

test('temporary credentials: the session token is sent and signed', async () => {
  expect((await gw.admin('PUT', '/orgs/default/providers/aws-sts', { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'ASIAFAKEBEDROCK0002', secretAccessKey: SECRET, sessionToken: SESSION, baseUrl: aws.url })).status).toBe(200)
  const res = await gw.chat({ model: `aws-sts/${MODEL}`, messages: hello })
  expect(res.status).toBe(200)
  expect(aws.seen.at(-1)?.headers.get('x-amz-security-token')).toBe(SESSION)
})

test('a wrong secret: the fake refuses the signature, a key failure (502), and neither secret appears in an admin answer, the error or the log', async () => {
  const put = await gw.admin('PUT', '/orgs/default/providers/aws-bad', { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: WRONG, baseUrl: aws.url })
  expect(put.status).toBe(200)
  const answers = [await put.text(), await (await gw.admin('GET', '/orgs/default')).text()]
  expect(answers[1]).toContain('aws-bad')
  const res = await gw.chat({ model: `aws-bad/${MODEL}`, messages: hello })
  expect(res.status).toBe(502)
  const error = await res.text()
  expect(error).toContain('InvalidSignatureException')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(JSON.stringify(log.attempts)).toContain('"class":"key"')
  for (const text of [...answers, error, JSON.stringify(log)]) {
    for (const s of [SECRET, WRONG, SESSION]) expect(text).not.toContain(s.slice(0, 12))
  }
})

test('a Bedrock provider record is checked: a region, and access keys or an API key', async () => {
  const bad = await gw.admin('PUT', '/orgs/default/providers/aws-x', { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001' })
  expect(bad.status).toBe(400)
  expect(await bad.text()).toContain('secretAccessKey')
  expect((await gw.admin('PUT', '/orgs/default/providers/aws-x', { kind: 'bedrock', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: SECRET })).status).toBe(400)
  // A refused record never repeats a secret it was given.
  const long = `${SECRET}${'x'.repeat(300)}`
  const refused = await gw.admin('PUT', '/orgs/default/providers/aws-x', { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: long, sessionToken: 5 })
  expect(refused.status).toBe(400)
  expect(await refused.text()).not.toContain(SECRET.slice(0, 12))
  const both = await gw.admin('PUT', '/orgs/default/providers/aws-x', { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: SECRET, apiKey: API_KEY })
  expect(both.status).toBe(400)
  expect(await both.text()).not.toContain(API_KEY.slice(0, 12))
})

test('a throttlingException frame before any content of a stream falls back to openai', async () => {
  aws.plan({ kind: 'stream-exception', type: 'throttlingException', message: 'Too many tokens, please wait before trying again.' })
  const res = await gw.chat({ model: `bedrock/${MODEL}`, messages: hello, stream: true, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  expect((events[0] as Record<string, any>).model).toBe('openai/gpt-4o-mini')
})

test('a Bedrock API key is sent as Authorization: Bearer, unsigned, and never shown by the admin API', async () => {
  const put = await gw.admin('PUT', '/orgs/default/providers/aws-key', { kind: 'bedrock', region: 'eu-west-1', apiKey: API_KEY, baseUrl: aws.url })
  expect(put.status).toBe(200)
  expect(await put.json()).toMatchObject({ kind: 'bedrock', region: 'eu-west-1', auth: 'apiKey' })
  const res = await gw.chat({ model: `aws-key/${MODEL}`, messages: hello })
  expect(res.status).toBe(200)
  expect(aws.seen.at(-1)?.signer).toBe('bearer')
  expect(aws.seen.at(-1)?.headers.get('authorization')).toBe(`Bearer ${API_KEY}`)
  expect(await (await gw.admin('GET', '/orgs/default')).text()).not.toContain(API_KEY.slice(0, 12))
})

test("/v1/models lists the catalog's Bedrock models under the provider's name, each with the endpoints it serves; AWS is not asked", async () => {
  const before = aws.seen.length
  const res = await gw.fetch('/v1/models')
  expect(res.status).toBe(200)
  const data = ((await res.json()) as { data: { id: string; owned_by: string; endpoints: string[] }[] }).data
  expect(data.find((m) => m.id === 'bedrock/amazon.nova-pro-v1:0')).toMatchObject({ owned_by: 'bedrock', endpoints: expect.arrayContaining(['/v1/chat/completions', '/v1/messages']) })
  expect(data.find((m) => m.id === 'bedrock/amazon.titan-embed-text-v2:0')).toMatchObject({ endpoints: ['/v1/embeddings'] })
  expect(data.find((m) => m.id === `bedrock/${MODEL}`)).toBeDefined()
  expect(new Set(data.map((m) => m.id)).size).toBe(data.length)
  const one = await gw.fetch(`/v1/models/${encodeURIComponent('bedrock/amazon.nova-pro-v1:0')}`)
  expect(one.status).toBe(200)
  expect(await one.json()).toMatchObject({ id: 'bedrock/amazon.nova-pro-v1:0', owned_by: 'bedrock' })
  expect(aws.seen.length).toBe(before)
})

const embed = (body: unknown) => gw.fetch('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

test('Titan embeddings: a signed InvokeModel call with inputText and dimensions, the vector and its token count in OpenAI terms, priced', async () => {
  const res = await embed({ model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'the quick brown fox', dimensions: 256 })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  expect(body).toMatchObject({ object: 'list', model: 'amazon.titan-embed-text-v2:0', usage: { prompt_tokens: 4, total_tokens: 4 } })
  expect(body.data).toHaveLength(1)
  expect(body.data[0]).toMatchObject({ object: 'embedding', index: 0 })
  expect(body.data[0].embedding).toHaveLength(256)
  const seen = aws.seen.at(-1)
  expect(seen).toMatchObject({ modelId: 'amazon.titan-embed-text-v2:0', action: 'invoke', signer: 'AKIAFAKEBEDROCK0001', body: { inputText: 'the quick brown fox', dimensions: 256 } })
  // $0.02 per million input tokens (the catalog's bedrock section).
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBeCloseTo((4 * 0.02) / 1e6, 15)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ provider: 'bedrock', endpoint: '/v1/embeddings', usage: { promptTokens: 4, estimated: false } })
})

test('Cohere embeddings: all inputs in one call as texts with input_type, base64 if asked; Cohere counts no tokens, so gw estimates them', async () => {
  const res = await embed({ model: 'bedrock/cohere.embed-english-v3', input: ['first text', 'second one here'], encoding_format: 'base64' })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1])
  // base64 of 1024 little-endian float32 values.
  expect(Buffer.from(body.data[1].embedding, 'base64')).toHaveLength(4096)
  expect(aws.seen.at(-1)).toMatchObject({ modelId: 'cohere.embed-english-v3', action: 'invoke', body: { texts: ['first text', 'second one here'], input_type: 'search_document' } })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ usage: { estimated: true } })
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
})

test('what a Bedrock embeddings model cannot take is a 400 before anything is sent: two inputs to Titan, a size it lacks, a chat model', async () => {
  const before = aws.seen.length
  for (const [body, says] of [
    [{ model: 'bedrock/amazon.titan-embed-text-v2:0', input: ['a', 'b'] }, 'one text per call'],
    [{ model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'a', dimensions: 300 }, '256, 512, 1024'],
    [{ model: 'bedrock/cohere.embed-english-v3', input: 'a', dimensions: 256 }, 'one size'],
    [{ model: `bedrock/${MODEL}`, input: 'a' }, 'not a Bedrock embeddings model'],
  ] as const) {
    const res = await embed(body)
    expect(res.status).toBe(400)
    expect(((await res.json()) as Record<string, string>).message).toContain(says)
  }
  expect(aws.seen.length).toBe(before)
})

test('a config file (GW_CONFIG) sets a Bedrock provider like the admin API does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bedrock-config-'))
  const path = join(dir, 'gw.yaml')
  writeFileSync(path, `providers:\n  bedrock:\n    - name: default\n      kind: bedrock\n      region: eu-west-1\n      accessKeyId: AKIAFAKEBEDROCK0001\n      secretAccessKey: ${SECRET}\n      baseUrl: ${aws.url}\n`)
  const other = await startTestGateway({}, { GW_CONFIG: path })
  try {
    aws.plan({ kind: 'text', text: 'From the config file' })
    const res = await other.chat({ model: `bedrock/${MODEL}`, messages: hello })
    expect(res.status).toBe(200)
    expect(((await res.json()) as Record<string, any>).choices[0].message.content).toBe('From the config file')
    expect(aws.seen.at(-1)?.signer).toBe('AKIAFAKEBEDROCK0001')
  } finally {
    await other.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a key whose signature is refused moves the request to the provider\'s next key, signed with that key\'s secret', async () => {
  const put = (name: string, secretAccessKey: string, weight: number) =>
    gw.admin('PUT', `/orgs/default/providers/aws-two/keys/${name}`, { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey, baseUrl: aws.url, weight })
  expect((await put('bad', WRONG, 1e6)).status).toBe(200)
  expect((await put('good', SECRET, 1e-6)).status).toBe(200)
  const res = await gw.chat({ model: `aws-two/${MODEL}`, messages: hello })
  expect(res.status).toBe(200)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.attempts).toEqual([
    expect.objectContaining({ key: 'bad', status: 403, class: 'key' }),
    expect.objectContaining({ key: 'good', outcome: 'ok' }),
  ])
})

test('a conversation with tool calls keeps a toolConfig (Converse refuses toolUse/toolResult without one), with tool_choice none or no tools declared; blank text blocks are left out', async () => {
  const history = [
    ...hello,
    { role: 'assistant', content: '\n\n', tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'tooluse_1', content: '14 °C' },
  ]
  const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }
  for (const extra of [{}, { tools: [weather], tool_choice: 'none' }]) {
    aws.plan({ kind: 'text', text: 'It is mild.' })
    const res = await gw.chat({ model: `bedrock/${MODEL}`, messages: history, max_tokens: 40, ...extra })
    expect(res.status).toBe(200)
    const sent = aws.seen.at(-1)?.body as Record<string, any>
    expect(sent.toolConfig.tools.map((t: any) => t.toolSpec.name)).toEqual(['get_weather'])
    expect(sent.messages[1].content).toEqual([{ toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } }])
  }
  // Without tool calls in the conversation, tool_choice none still declares no tools.
  aws.plan({ kind: 'text', text: 'Hi' })
  await gw.chat({ model: `bedrock/${MODEL}`, messages: hello, tools: [weather], tool_choice: 'none' })
  expect((aws.seen.at(-1)?.body as Record<string, any>).toolConfig).toBeUndefined()
})
