// Guardrails end to end (PRODUCT §19): what reaches the provider, what the client reads (JSON, SSE, the
// OpenAI SDK), the 400, webhooks allow/deny/rewrite/down under failOpen, the log entry and the metrics.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import OpenAI from 'openai'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'

/**
 * An OpenAI chat-completions upstream that answers with the last user message as it received it: JSON,
 * or SSE split at the cut points queued for the next request (then usage and [DONE]).
 */
function startEcho() {
  const received: Record<string, any>[] = []
  const cuts: number[][] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as Record<string, any>
      received.push(body)
      const last = body.messages.findLast((m: { role: string }) => m.role === 'user')
      const text: string = typeof last.content === 'string' ? last.content : last.content.map((p: { text: string }) => p.text).join('')
      const base = { id: 'chatcmpl-echo', created: 1700000000, model: body.model }
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      if (!body.stream)
        return Response.json({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop', logprobs: null }],
          usage,
        })
      const at = [...new Set((cuts.shift() ?? []).map((n) => n % (text.length + 1)))].sort((a, b) => a - b)
      const pieces: string[] = []
      let from = 0
      for (const p of [...at, text.length]) {
        pieces.push(text.slice(from, p))
        from = p
      }
      const chunk = (delta: object, finish: string | null = null, extra: object = {}) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...extra })}\n\n`
      let sse = chunk({ role: 'assistant', content: '' })
      for (const p of pieces) if (p) sse += chunk({ content: p })
      sse += chunk({}, 'stop')
      sse += `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`
      sse += 'data: [DONE]\n\n'
      return new Response(sse, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, received, cuts, stop: () => server.stop(true) }
}

/** A webhook guardrail's endpoint: answers with whatever the test sets; `delayMs` makes it slow. */
function startWebhook() {
  const state = { answer: { allow: true } as unknown, status: 200, delayMs: 0, posted: [] as unknown[] }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      state.posted.push(await req.json())
      if (state.delayMs) await Bun.sleep(state.delayMs)
      return Response.json(state.answer, { status: state.status })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/check`, state, stop: () => server.stop(true) }
}

let echo: ReturnType<typeof startEcho>
let hook: ReturnType<typeof startWebhook>
let anthropic: FakeUpstream
let openaiFake: FakeUpstream
let gw: TestGateway
let seq = 0

beforeAll(async () => {
  echo = startEcho()
  hook = startWebhook()
  anthropic = await startFake('anthropic')
  openaiFake = await startFake('openai')
  gw = await startTestGateway({ anthropic })
})
afterAll(async () => {
  await gw.stop()
  echo.stop()
  hook.stop()
  await anthropic.stop()
  await openaiFake.stop()
})

/** A fresh org whose OpenAI key points at the echo upstream, with the given guardrails. */
async function orgWith(guardrails: object[], policy: object = {}) {
  const id = `guard-${++seq}`
  await gw.admin('POST', '/orgs', { id, name: id })
  await gw.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: 'sk-echo', baseUrl: echo.url })
  await gw.admin('PUT', `/orgs/${id}/providers/anthropic`, { apiKey: anthropic.apiKey, baseUrl: anthropic.url })
  const put = await gw.admin('PUT', `/orgs/${id}/policy`, { guardrails, ...policy })
  expect(put.status).toBe(200)
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  const chat = (content: string, extra: object = {}) =>
    gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], ...extra }, { authorization: `GwKey ${key}` })
  return { id, key, chat, log: (res: Response) => gw.log(res.headers.get('x-gw-request-id') as string, key) }
}

const VALUES = ['ada@example.com', '+44 20 7946 0958', '4111 1111 1111 1111', 'DE89 3704 0044 0532 0130 00', '123-45-6789', '10.0.0.7', 'AKIAIOSFODNN7EXAMPLE']
const LETTER = `Dear team, I am Ada (${VALUES[0]}, ${VALUES[1]}). Please refund card ${VALUES[2]} to IBAN ${VALUES[3]}; SSN ${VALUES[4]}, from ${VALUES[5]}, key ${VALUES[6]}.`
const maskAll = { name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: ['email', 'phone', 'credit_card', 'iban', 'us_ssn', 'ip_address', 'secret'] }

test('mask: the provider gets placeholders, the client the values (JSON); the log keeps the masked text and names what acted', async () => {
  const org = await orgWith([maskAll])
  const res = await org.chat(LETTER)
  expect(res.status).toBe(200)
  const body = (await res.json()) as { choices: { message: { content: string } }[] }
  expect(body.choices[0]?.message.content).toBe(LETTER)
  const sent = echo.received.at(-1)?.messages[0].content as string
  for (const v of VALUES) expect(sent).not.toContain(v)
  expect(sent).toBe(
    'Dear team, I am Ada ([EMAIL_1], [PHONE_1]). Please refund card [CREDIT_CARD_1] to IBAN [IBAN_1]; SSN [US_SSN_1], from [IP_ADDRESS_1], key [SECRET_1].',
  )
  const entry = await org.log(res)
  expect(entry.guardrails).toEqual([{ name: 'pii', action: 'mask', entities: ['email', 'phone', 'credit_card', 'iban', 'us_ssn', 'ip_address', 'secret'] }])
  const stored = JSON.stringify([entry.requestBody, entry.responseBody])
  for (const v of VALUES) expect(stored).not.toContain(v)
  expect(stored).toContain('[CREDIT_CARD_1]')
})

test('a request refused before its guardrails read it (the policy, a malformed field) is logged without its body; one they read keeps the masked text', async () => {
  const org = await orgWith([maskAll], { maxTokens: 10 })
  const before = echo.received.length
  for (const [extra, code] of [[{ max_tokens: 1000 }, 'token_limit_exceeded'], [{ temperature: 'hot' }, 'gateway_error']] as const) {
    const res = await org.chat(LETTER, extra)
    expect(res.status).toBe(400)
    const entry = await org.log(res)
    expect(entry).toMatchObject({ status: 400, errorCode: code })
    expect(entry.requestBody ?? null).toBeNull()
    for (const v of VALUES) expect(JSON.stringify(entry)).not.toContain(v)
  }
  expect(echo.received.length).toBe(before)
  const ok = await org.chat(LETTER, { max_tokens: 5 })
  expect(ok.status).toBe(200)
  const kept = JSON.stringify((await org.log(ok)).requestBody)
  expect(kept).toContain('[EMAIL_1]')
  for (const v of VALUES) expect(kept).not.toContain(v)
})

test('mask, streamed: a placeholder split across chunks is restored whole and the SSE stays valid (OpenAI SDK)', async () => {
  const org = await orgWith([maskAll])
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: org.key, maxRetries: 0 })
  // Cut inside "[EMAIL_1]" and inside "[CREDIT_CARD_1]" of the masked text the echo sends back.
  echo.cuts.push([23, 26, 29, 71, 72, 80])
  const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: LETTER }], stream: true, stream_options: { include_usage: true } })
  let text = ''
  let usage: unknown
  const deltas: string[] = []
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta.content
    if (d) {
      deltas.push(d)
      text += d
    }
    if (chunk.usage) usage = chunk.usage
  }
  expect(text).toBe(LETTER)
  for (const d of deltas) expect(d).not.toMatch(/\[(EMAIL|PHONE|CREDIT_CARD|IBAN|US_SSN|IP_ADDRESS|SECRET)(_\d*)?\]?$/)
  expect(usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 })
})

test('property, over real sockets: any text with any mix of values, streamed back in any chunks, reaches the client exactly and the provider never sees a value', async () => {
  const org = await orgWith([maskAll])
  const piece = fc.oneof(fc.constantFrom(...VALUES), fc.stringMatching(/^[a-z ,.()!?]{0,10}$/), fc.constantFrom('[EMAIL_1]', '[', '[EMAIL_'))
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), async (parts, cuts) => {
      const text = parts.join(' ').trim() || 'x'
      echo.cuts.push(cuts)
      const res = await org.chat(text, { stream: true })
      const events = await readSse(res)
      expect(events.at(-1)).toBe('[DONE]')
      const got = events.flatMap((e) => (e === '[DONE]' ? [] : ((e.choices as { delta: { content?: string } }[])[0]?.delta.content ?? ''))).join('')
      expect(got).toBe(text)
      const sent = echo.received.at(-1)?.messages[0].content as string
      for (const v of VALUES) if (text.includes(v)) expect(sent).not.toContain(v)
    }),
    { numRuns: 40 },
  )
})

test('block: 400 guardrail_blocked naming the guardrail and the kind, never the value; nothing sent; the log holds no value', async () => {
  const org = await orgWith([{ name: 'no-cards', kind: 'pii', on: 'input', action: 'block', entities: ['credit_card', 'iban'] }])
  const before = echo.received.length
  const res = await org.chat(`refund ${VALUES[2]} please`)
  expect(res.status).toBe(400)
  const body = (await res.json()) as Record<string, unknown>
  expect(body).toEqual({ error: true, code: 'guardrail_blocked', message: 'Guardrail "no-cards" blocked the request: it contains a credit card number', requestId: res.headers.get('x-gw-request-id') })
  expect(echo.received.length).toBe(before)
  const entry = await org.log(res)
  expect(entry).toMatchObject({ status: 400, errorCode: 'guardrail_blocked', guardrails: [{ name: 'no-cards', action: 'block', entities: ['credit_card'] }] })
  expect(JSON.stringify(entry)).not.toContain(VALUES[2] as string)
  expect(JSON.stringify(entry.requestBody)).toContain('refund [CREDIT_CARD] please')
  // A look-alike (Luhn fails) goes through untouched.
  const ok = await org.chat('refund 4111 1111 1111 1112 please')
  expect(ok.status).toBe(200)
  expect(echo.received.at(-1)?.messages[0].content).toBe('refund 4111 1111 1111 1112 please')
})

test('redact on input and on output; output block ends a stream with an error event before the value is sent', async () => {
  const org = await orgWith([
    { name: 'emails', kind: 'pii', on: 'both', action: 'redact', entities: ['email'] },
    { name: 'no-keys', kind: 'pii', on: 'output', action: 'block', entities: ['secret'] },
  ])
  const res = await org.chat('write to ada@example.com')
  expect(((await res.json()) as any).choices[0].message.content).toBe('write to [EMAIL]')
  expect(echo.received.at(-1)?.messages[0].content).toBe('write to [EMAIL]')
  // The echo answers with a key only the output guardrail sees (the input has no secret guardrail).
  const text = `${'padding words '.repeat(40)}the key is AKIAIOSFODNN7EXAMPLE and more`
  echo.cuts.push([10, 100, 300, 560])
  const s = await org.chat(text, { stream: true })
  expect(s.status).toBe(200)
  const raw = await s.text()
  expect(raw).not.toContain('AKIAIOSFODNN7EXAMPLE')
  const events = raw.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)))
  expect(events.at(-1)).toEqual({ error: true, code: 'guardrail_blocked', message: 'Guardrail "no-keys" blocked the answer: it contains a secret (an API key or private key)', requestId: s.headers.get('x-gw-request-id') })
  expect(raw.endsWith('data: [DONE]\n\n')).toBe(true)
  const entry = await org.log(s)
  expect(entry).toMatchObject({ errorCode: 'guardrail_blocked', incomplete: true })
  expect(JSON.stringify(entry)).not.toContain('AKIAIOSFODNN7EXAMPLE')
  // The same answer as JSON: 400, the upstream's usage and cost still logged.
  const j = await org.chat(text)
  expect(j.status).toBe(400)
  expect(await j.json()).toMatchObject({ code: 'guardrail_blocked', message: 'Guardrail "no-keys" blocked the answer: it contains a secret (an API key or private key)' })
  const jEntry = await org.log(j)
  expect(jEntry).toMatchObject({ status: 400, errorCode: 'guardrail_blocked', model: 'openai/gpt-4o-mini', usage: { promptTokens: 10, completionTokens: 5 } })
  expect(jEntry.costUsd).toBeGreaterThan(0)
  expect(JSON.stringify(jEntry)).not.toContain('AKIAIOSFODNN7EXAMPLE')
})

test('webhook: allow, deny with its reason, rewrite in order, and down or slow following failOpen', async () => {
  const hookRule = (failOpen: boolean) => ({ name: 'review', kind: 'webhook', on: 'input', url: hook.url, timeoutMs: 300, failOpen })
  const open = await orgWith([hookRule(true)])
  const closed = await orgWith([hookRule(false)])

  hook.state.answer = { allow: true }
  expect((await open.chat('hello')).status).toBe(200)
  expect(hook.state.posted.at(-1)).toEqual({ texts: ['hello'] })

  hook.state.answer = { allow: false, reason: 'off-topic' }
  const denied = await open.chat('hello')
  expect(denied.status).toBe(400)
  expect(await denied.json()).toMatchObject({ code: 'guardrail_blocked', message: 'Guardrail "review" blocked the request: off-topic' })

  hook.state.answer = { allow: true, texts: ['hello, politely'] }
  const rewritten = await open.chat('hello')
  expect(((await rewritten.json()) as any).choices[0].message.content).toBe('hello, politely')
  expect((await open.log(rewritten)).guardrails).toEqual([{ name: 'review', action: 'rewrite', entities: [] }])

  hook.state.answer = { allow: true }
  hook.state.delayMs = 1000
  const slowOpen = await open.chat('hello')
  expect(slowOpen.status).toBe(200)
  expect((await open.log(slowOpen)).guardrails).toEqual([{ name: 'review', action: 'fail_open', entities: [] }])
  const slowClosed = await closed.chat('hello')
  expect(slowClosed.status).toBe(503)
  expect(await slowClosed.json()).toMatchObject({ code: 'gateway_error', message: 'Guardrail "review" could not check the request (no answer within 300 ms) and fails closed: try again later' })
  hook.state.delayMs = 0

  hook.state.status = 500
  expect((await open.chat('hello')).status).toBe(200)
  const down = await closed.chat('hello')
  expect(down.status).toBe(503)
  expect(((await down.json()) as any).message).toContain('it answered HTTP 500')
  hook.state.status = 200

  hook.state.answer = { allow: true, texts: ['a', 'b'] }
  expect((await closed.chat('hello')).status).toBe(503)
  // An answer past 4 MiB is not read to its end.
  hook.state.answer = { allow: true, pad: 'x'.repeat(5_000_000) }
  const huge = await closed.chat('hello')
  expect(huge.status).toBe(503)
  expect(((await huge.json()) as any).message).toContain('its answer is too large')
  hook.state.answer = { allow: true }
})

test('metrics count what acted; Messages is guarded through its translating adapter; policy checks refuse what cannot run', async () => {
  const org = await orgWith([maskAll])
  await org.chat('mail ada@example.com')
  const m = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(readExposition(await m.text()).value('gw_guardrail_actions_total', { name: 'pii', action: 'mask' })).toBeGreaterThan(0)

  const msg = await gw.fetch('/v1/messages', {
    method: 'POST',
    headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'mail ada@example.com' }] }),
  })
  expect(msg.status).toBe(200)
  expect(JSON.stringify(anthropic.requests.at(-1)?.body)).toContain('mail [EMAIL_1]')
  expect(JSON.stringify(anthropic.requests.at(-1)?.body)).not.toContain('ada@example.com')

  // count_tokens: screened, counted by gw (Anthropic never reads it), logged without the value; a block refuses it.
  const count = (key: string) =>
    gw.fetch('/v1/messages/count_tokens', {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: `mail ada@example.com, card ${VALUES[2]}` }] }),
    })
  const sentBefore = anthropic.requests.length
  const counted = await count(org.key)
  expect(counted.status).toBe(200)
  expect(counted.headers.get('x-gw-estimated')).toBe('true')
  expect(((await counted.json()) as any).input_tokens).toBeGreaterThan(0)
  const countEntry = await org.log(counted)
  expect(JSON.stringify(countEntry.requestBody)).toContain('[EMAIL_1]')
  expect(JSON.stringify(countEntry)).not.toContain('ada@example.com')
  const blocking = await orgWith([{ name: 'no-cards', kind: 'pii', on: 'input', action: 'block', entities: ['credit_card'] }])
  const refused = await count(blocking.key)
  expect(refused.status).toBe(400)
  expect(((await refused.json()) as any).error).toMatchObject({ code: 'guardrail_blocked' })
  expect(anthropic.requests.length).toBe(sentBefore)

  const bad = await gw.admin('PUT', `/orgs/${org.id}/policy`, { guardrails: [{ name: 'r', kind: 'regex', on: 'input', action: 'block', patterns: ['(\\w+)\\1'] }] })
  expect(bad.status).toBe(400)
  expect(((await bad.json()) as any).message).toMatch(/guardrails\/0\/patterns\/0.*backreferences and lookaround are not supported/)
  const maskOut = await gw.admin('PUT', `/orgs/${org.id}/policy`, { guardrails: [{ name: 'm', kind: 'pii', on: 'output', action: 'mask', entities: ['email'] }] })
  expect(maskOut.status).toBe(400)
})

test('embeddings: inputs are masked or refused before the provider sees them; the log keeps no value', async () => {
  const org = await orgWith([{ name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: ['email'] }, { name: 'no-cards', kind: 'pii', on: 'input', action: 'block', entities: ['credit_card'] }])
  await gw.admin('PUT', `/orgs/${org.id}/providers/openai`, { apiKey: openaiFake.apiKey, baseUrl: openaiFake.url })
  const embed = (input: unknown) =>
    gw.fetch('/v1/embeddings', { method: 'POST', headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/text-embedding-3-small', input }) })
  const res = await embed(['mail ada@example.com', 'plain text'])
  expect(res.status).toBe(200)
  expect((openaiFake.requests.at(-1)?.body as any).input).toEqual(['mail [EMAIL_1]', 'plain text'])
  const entry = await org.log(res)
  expect(entry.guardrails).toEqual([{ name: 'pii', action: 'mask', entities: ['email'] }])
  expect(JSON.stringify(entry)).not.toContain('ada@example.com')
  const single = await embed('ada@example.com')
  expect((openaiFake.requests.at(-1)?.body as any).input).toBe('[EMAIL_1]')
  expect(single.status).toBe(200)
  const before = openaiFake.requests.length
  const refused = await embed(['card 4111 1111 1111 1111'])
  expect(refused.status).toBe(400)
  expect(((await refused.json()) as any).code).toBe('guardrail_blocked')
  expect(openaiFake.requests.length).toBe(before)
})

test('webhook on the answer: it reads the texts as the provider wrote them (placeholders, never the masked values); allow, rewrite and deny, JSON and streamed (held whole)', async () => {
  const org = await orgWith([
    { name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: ['email'] },
    { name: 'tone', kind: 'webhook', on: 'output', url: hook.url, timeoutMs: 500, failOpen: false },
  ])
  hook.state.answer = { allow: true }
  const plain = await org.chat('write to ada@example.com')
  expect(((await plain.json()) as any).choices[0].message.content).toBe('write to ada@example.com')
  expect(hook.state.posted.at(-1)).toEqual({ texts: ['write to [EMAIL_1]'] })

  hook.state.answer = { allow: true, texts: ['please write to [EMAIL_1] politely'] }
  const rewritten = await org.chat('write to ada@example.com')
  expect(((await rewritten.json()) as any).choices[0].message.content).toBe('please write to ada@example.com politely')
  expect((await org.log(rewritten)).guardrails).toEqual([
    { name: 'pii', action: 'mask', entities: ['email'] },
    { name: 'tone', action: 'rewrite', entities: [] },
  ])

  echo.cuts.push([3, 9, 14])
  const streamed = await org.chat('write to ada@example.com', { stream: true })
  const events = await readSse(streamed)
  expect(events.at(-1)).toBe('[DONE]')
  const text = events.flatMap((e) => (e === '[DONE]' ? [] : ((e.choices as { delta: { content?: string } }[])[0]?.delta.content ?? ''))).join('')
  expect(text).toBe('please write to ada@example.com politely')

  hook.state.answer = { allow: false, reason: 'too rude' }
  const denied = await org.chat('write to ada@example.com')
  expect(denied.status).toBe(400)
  expect(await denied.json()).toMatchObject({ code: 'guardrail_blocked', message: 'Guardrail "tone" blocked the answer: too rude' })
  echo.cuts.push([5])
  const deniedStream = await org.chat('write to ada@example.com', { stream: true })
  const raw = await deniedStream.text()
  expect(raw).not.toContain('write to')
  expect(raw).toContain('"code":"guardrail_blocked"')
  hook.state.answer = { allow: true }

  hook.state.status = 500
  const down = await org.chat('hello')
  expect(down.status).toBe(503)
  expect(((await down.json()) as any).message).toContain('could not check the answer')
  hook.state.status = 200
})

test('a body over GW_LOG_BODY_MAX_BYTES is logged as a preview with no masked value in it', async () => {
  const small = await startTestGateway({}, { GW_LOG_BODY_MAX_BYTES: '1024' })
  try {
    await small.admin('POST', '/orgs', { id: 'preview', name: 'preview' })
    await small.admin('PUT', '/orgs/preview/providers/openai', { apiKey: 'sk-echo', baseUrl: echo.url })
    await small.admin('PUT', '/orgs/preview/policy', { guardrails: [maskAll] })
    const { key } = (await (await small.admin('POST', '/orgs/preview/service-keys', {})).json()) as { key: string }
    const content = `write to ada@example.com ${'and more words '.repeat(500)}`
    const res = await small.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] }, { authorization: `GwKey ${key}` })
    expect(res.status).toBe(200)
    const entry = await small.log(res.headers.get('x-gw-request-id') as string, key)
    expect(entry.requestBody).toMatchObject({ truncated: true })
    expect((entry.requestBody as { preview: string }).preview).toContain('write to [EMAIL_1]')
    expect(JSON.stringify(entry)).not.toContain('ada@example.com')
  } finally {
    await small.stop()
  }
})

test('Responses and prompt runs are guarded too: the provider gets placeholders, the client the values', async () => {
  const org = await orgWith([maskAll])
  const post = (path: string, body: object) =>
    gw.fetch(path, { method: 'POST', headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const r = await post('/v1/responses', { model: 'openai/gpt-4o-mini', input: 'mail ada@example.com' })
  expect(r.status).toBe(200)
  expect(JSON.stringify(echo.received.at(-1)?.messages)).toContain('mail [EMAIL_1]')
  const out = (await r.json()) as { output: { content?: { text?: string }[] }[] }
  expect(out.output.flatMap((o) => o.content ?? []).map((c) => c.text).join('')).toBe('mail ada@example.com')

  await gw.admin('POST', `/orgs/${org.id}/prompts`, { slug: 'fwd', name: 'fwd' })
  await gw.admin('POST', `/orgs/${org.id}/prompts/fwd/versions`, {
    model: 'openai/gpt-4o-mini',
    userTemplate: 'Forward to {{to}}.',
    variables: [{ name: 'to', type: 'string', required: true }],
    publish: true,
  })
  const run = await post('/v1/prompts/fwd/run', { variables: { to: 'grace@example.org' } })
  expect(run.status).toBe(200)
  expect(echo.received.at(-1)?.messages.at(-1).content).toBe('Forward to [EMAIL_1].')
  expect(((await run.json()) as any).choices[0].message.content).toBe('Forward to grace@example.org.')
  const entry = await org.log(run)
  expect(JSON.stringify(entry)).not.toContain('grace@example.org')
})
