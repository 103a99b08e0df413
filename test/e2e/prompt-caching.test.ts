// Managed prompt caching (PRODUCT §19): with `promptCaching: "auto"`, Anthropic requests (direct and on
// Bedrock) with a long stable prefix get breakpoints on the last tool, the system prompt and the turn
// before the final user turn, four at most with the caller's own kept; a chat client's cache_control
// reaches Anthropic as given; cache reads and writes in the usage, the cost, the log and gw_tokens_total.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'

const SECRET = 'bEdRoCkSeCrEt/K7MDENG/bPxRfiCYEXAMPLEKEY'
const BEDROCK_MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0'
let anthropic: FakeUpstream
let aws: FakeBedrock
let gw: TestGateway
let seq = 0

beforeAll(async () => {
  anthropic = await startFake('anthropic')
  aws = startFakeBedrock({ region: 'eu-west-1', keys: { AKIAFAKEBEDROCK0001: { secretAccessKey: SECRET } } })
  gw = await startTestGateway({ anthropic })
})
afterAll(async () => {
  await gw.stop()
  aws.stop()
  await anthropic.stop()
})

async function orgWith(policy: object) {
  const id = `pc-${++seq}`
  await gw.admin('POST', '/orgs', { id, name: id })
  await gw.admin('PUT', `/orgs/${id}/providers/anthropic`, { apiKey: anthropic.apiKey, baseUrl: anthropic.url })
  await gw.admin('PUT', `/orgs/${id}/providers/bedrock`, { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIAFAKEBEDROCK0001', secretAccessKey: SECRET, baseUrl: aws.url })
  expect((await gw.admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  return { id, key, chat: (body: object) => gw.chat({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, ...body }, { authorization: `GwKey ${key}` }) }
}

/** An agent's request: a long system prompt and tools (the stable prefix), earlier turns, a final user turn. */
const LONG = 'You are a careful support agent for ACME. '.repeat(120) // ~5,000 characters
const tool = (name: string) => ({ type: 'function', function: { name, description: `Looks up ${name}.`, parameters: { type: 'object', properties: { q: { type: 'string' } } } } })
const agent = {
  messages: [
    { role: 'system', content: LONG },
    { role: 'user', content: 'Where is my order?' },
    { role: 'assistant', content: 'Let me check.' },
    { role: 'user', content: 'It is order 42.' },
  ],
  tools: [tool('orders'), tool('refunds')],
}
const EPHEMERAL = { type: 'ephemeral' }

test('auto: breakpoints on the last tool, the system prompt and the turn before the final user turn', async () => {
  const org = await orgWith({ promptCaching: 'auto' })
  expect((await org.chat(agent)).status).toBe(200)
  const sent = anthropic.requests.at(-1)?.body as Record<string, any>
  expect(sent.tools.map((t: any) => t.cache_control)).toEqual([undefined, EPHEMERAL])
  expect(sent.system).toEqual([{ type: 'text', text: LONG, cache_control: EPHEMERAL }])
  expect(sent.messages.map((m: any) => m.content)).toEqual([
    'Where is my order?',
    [{ type: 'text', text: 'Let me check.', cache_control: EPHEMERAL }],
    'It is order 42.',
  ])
})

test('auto on /v1/messages relayed to Anthropic: the same breakpoints on a copy of the client body; an org without it sends the body as it came', async () => {
  const messagesBody = {
    model: 'anthropic/claude-sonnet-4-5',
    max_tokens: 100,
    system: LONG,
    tools: [{ name: 'orders', description: 'Looks up orders.', input_schema: { type: 'object' } }, { name: 'refunds', description: 'Looks up refunds.', input_schema: { type: 'object' } }],
    messages: [
      { role: 'user', content: 'Where is my order?' },
      { role: 'assistant', content: 'Let me check.' },
      { role: 'user', content: 'It is order 42.' },
    ],
  }
  const post = (key: string) =>
    gw.fetch('/v1/messages', { method: 'POST', headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(messagesBody) })
  const auto = await orgWith({ promptCaching: 'auto' })
  expect((await post(auto.key)).status).toBe(200)
  const sent = anthropic.requests.at(-1)?.body as Record<string, any>
  expect(sent.tools.map((t: any) => t.cache_control)).toEqual([undefined, EPHEMERAL])
  expect(sent.system).toEqual([{ type: 'text', text: LONG, cache_control: EPHEMERAL }])
  expect(sent.messages.map((m: any) => m.content)).toEqual(['Where is my order?', [{ type: 'text', text: 'Let me check.', cache_control: EPHEMERAL }], 'It is order 42.'])
  const off = await orgWith({})
  expect((await post(off.key)).status).toBe(200)
  expect(anthropic.requests.at(-1)?.body).toEqual({ ...messagesBody, model: 'claude-sonnet-4-5' })
})

test('auto leaves a short prefix alone, and an org without it sends none', async () => {
  const auto = await orgWith({ promptCaching: 'auto' })
  await auto.chat({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] })
  expect(JSON.stringify(anthropic.requests.at(-1)?.body)).not.toContain('cache_control')
  const off = await orgWith({})
  await off.chat(agent)
  expect(JSON.stringify(anthropic.requests.at(-1)?.body)).not.toContain('cache_control')
})

test("the caller's cache_control on a content part or a tool reaches Anthropic as given; with auto, four at most and the caller's kept", async () => {
  const off = await orgWith({})
  const mine = { type: 'ephemeral', ttl: '1h' }
  const body = {
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'Rules.', cache_control: mine }] },
      { role: 'user', content: [{ type: 'text', text: 'Doc A', cache_control: mine }, { type: 'text', text: 'Question?' }] },
    ],
    tools: [{ ...tool('orders'), cache_control: mine }],
  }
  await off.chat(body)
  let sent = anthropic.requests.at(-1)?.body as Record<string, any>
  expect(sent.system).toEqual([{ type: 'text', text: 'Rules.', cache_control: mine }])
  expect(sent.messages[0].content).toEqual([{ type: 'text', text: 'Doc A', cache_control: mine }, { type: 'text', text: 'Question?' }])
  expect(sent.tools[0].cache_control).toEqual(mine)

  // Three of the caller's own and a long prefix: auto adds one, on the first place it would use that is free.
  const auto = await orgWith({ promptCaching: 'auto' })
  await auto.chat({
    ...agent,
    messages: [
      { role: 'system', content: [{ type: 'text', text: LONG, cache_control: mine }] },
      { role: 'user', content: [{ type: 'text', text: 'A', cache_control: mine }, { type: 'text', text: 'B', cache_control: mine }] },
      { role: 'assistant', content: 'Let me check.' },
      { role: 'user', content: 'It is order 42.' },
    ],
  })
  sent = anthropic.requests.at(-1)?.body as Record<string, any>
  const marks = JSON.stringify(sent).match(/cache_control/g)?.length
  expect(marks).toBe(4)
  expect(sent.system[0].cache_control).toEqual(mine)
  expect(sent.tools[1].cache_control).toEqual(EPHEMERAL)
  expect(sent.messages[1].content).toBe('Let me check.') // no room left for a fifth
})

test('cache reads and writes come back in usage.prompt_tokens_details, priced as such, in the log and in gw_tokens_total', async () => {
  const org = await orgWith({ promptCaching: 'auto' })
  anthropic.enqueue({ kind: 'reply', text: 'ok', usage: { prompt: 2000, completion: 10, cached: 1500, cacheWrite: 300 } })
  const res = await org.chat(agent)
  const body = (await res.json()) as any
  expect(body.usage).toMatchObject({ prompt_tokens: 2000, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 1500, cache_write_tokens: 300 } })
  anthropic.enqueue({ kind: 'reply', text: 'ok', usage: { prompt: 2000, completion: 10 } })
  const uncached = (await (await org.chat(agent)).json()) as any
  expect(body.usage.cost_usd).toBeLessThan(uncached.usage.cost_usd)
  const entry = await gw.log(res.headers.get('x-gw-request-id') as string, org.key)
  expect(entry.usage).toMatchObject({ promptTokens: 2000, cachedTokens: 1500, cacheWriteTokens: 300 })
  const m = readExposition(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text())
  expect(m.value('gw_tokens_total', { provider: 'anthropic', model: 'anthropic/claude-sonnet-4-5', kind: 'cached_input' })).toBeGreaterThanOrEqual(1500)
  expect(m.value('gw_tokens_total', { provider: 'anthropic', model: 'anthropic/claude-sonnet-4-5', kind: 'cache_write' })).toBeGreaterThanOrEqual(300)
})

test('auto on Bedrock: Converse cache points after the last tool, the system text and the turn before the final user turn', async () => {
  const org = await orgWith({ promptCaching: 'auto' })
  aws.plan({ kind: 'text', text: 'ok' })
  const res = await gw.chat({ ...agent, model: `bedrock/${BEDROCK_MODEL}`, max_tokens: 50 }, { authorization: `GwKey ${org.key}` })
  expect(res.status).toBe(200)
  const sent = aws.seen.at(-1)?.body as Record<string, any>
  const point = { cachePoint: { type: 'default' } }
  expect(sent.system).toEqual([{ text: LONG }, point])
  expect(sent.toolConfig.tools.at(-1)).toEqual(point)
  expect(sent.toolConfig.tools.length).toBe(3)
  expect(sent.messages[1].content).toEqual([{ text: 'Let me check.' }, point])
  expect(sent.messages[2].content).toEqual([{ text: 'It is order 42.' }])
})
