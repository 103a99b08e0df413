// OTLP traces end to end: a local receiver gets a SERVER span per request (continuing the incoming
// traceparent) and a CLIENT span per upstream attempt with the GenAI attributes; the provider gets a
// traceparent naming its attempt's span; a collector that is down or hangs slows no request.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { parseTraceParent } from '../../src/observability/trace-context'
import { startFakeBedrock } from '../fakes/bedrock'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver'
import { readExposition } from '../helpers/prometheus'

const SECRET_PROMPT = 'the vault combination is 31-41-59'
const hello = [{ role: 'user', content: SECRET_PROMPT }]
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_ID = '00f067aa0ba902b7'
const FAST_EXPORT = { traceExporter: { intervalMs: 20 } }

let openai: FakeUpstream
let mistral: FakeUpstream
let receiver: OtlpReceiver
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  receiver = await startOtlpReceiver()
  gw = await startTestGateway(
    { openai, mistral },
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gw-under-test', OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=abc%20def' },
    { ...FAST_EXPORT, health: { failureThreshold: 1000 } },
  )
})
afterAll(async () => {
  await gw.stop()
  await receiver.stop()
  await openai.stop()
  await mistral.stop()
})
beforeEach(() => {
  openai.reset()
  mistral.reset()
  receiver.spans.length = 0
})

const byKind = (spans: ReceivedSpan[], kind: number) => spans.filter((s) => s.kind === kind)

test('an incoming traceparent is continued: SERVER span under it, one CLIENT span per attempt, the providers get the attempt span as parent', async () => {
  openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  mistral.enqueue({ kind: 'reply', usage: { prompt: 11, completion: 6 } })
  const res = await gw.chat(
    { model: 'openai/gpt-4o', messages: hello, temperature: 0.5, max_tokens: 50, fallback_chain: [{ model: 'mistral/mistral-small-latest' }] },
    { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, tracestate: 'vendor=abc' },
  )
  expect(res.status).toBe(200)
  const requestId = res.headers.get('x-gw-request-id')
  await res.text()
  const spans = await receiver.waitFor(3)
  expect(spans).toHaveLength(3)
  const [server] = byKind(spans, 2)
  const clients = byKind(spans, 3)
  expect(server?.traceId).toBe(TRACE_ID)
  expect(server?.parentSpanId).toBe(PARENT_ID)
  expect(server?.name).toBe('POST /v1/chat/completions')
  expect(server?.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'openai/gpt-4o',
    'gen_ai.response.model': 'mistral/mistral-small-latest',
    'gen_ai.provider.name': 'mistral_ai',
    'gen_ai.usage.input_tokens': 11,
    'gen_ai.usage.output_tokens': 6,
    'gen_ai.response.finish_reasons': ['stop'],
    'http.response.status_code': 200,
    'gw.request_id': requestId,
    'gw.org_id': 'default',
    'gw.auth_mode': 'GwKey',
    'gw.fallback.reason': 'provider_error',
    'gw.fallback.model': 'mistral/mistral-small-latest',
  })
  expect(typeof server?.attributes['gw.cost_usd']).toBe('number')
  expect(server?.resource).toMatchObject({ 'service.name': 'gw-under-test' })

  expect(clients.map((c) => c.name)).toEqual(['chat gpt-4o', 'chat mistral-small-latest'])
  for (const c of clients) {
    expect(c.traceId).toBe(TRACE_ID)
    expect(c.parentSpanId).toBe(server?.spanId as string)
    expect(c.startNs).toBeGreaterThanOrEqual(server?.startNs as bigint)
    expect(c.endNs).toBeLessThanOrEqual(server?.endNs as bigint)
  }
  const [failed, answered] = clients
  expect(failed?.attributes).toMatchObject({
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o',
    'gen_ai.request.temperature': 0.5,
    'gen_ai.request.max_tokens': 50,
    'http.response.status_code': 500,
    'error.type': 'provider_error',
  })
  expect(failed?.status).toEqual({ code: 2, message: 'provider_error' })
  expect(answered?.attributes).toMatchObject({ 'gen_ai.provider.name': 'mistral_ai', 'gen_ai.usage.output_tokens': 6, 'gw.attempt.outcome': 'ok', 'gw.provider_key': 'default' })
  expect(answered?.status.code).toBe(0)

  // Each provider received a traceparent in the same trace naming its own attempt span.
  expect(parseTraceParent(openai.requests[0]?.headers.traceparent ?? null)).toEqual({ traceId: TRACE_ID, spanId: failed?.spanId as string, sampled: true })
  expect(parseTraceParent(mistral.requests[0]?.headers.traceparent ?? null)).toEqual({ traceId: TRACE_ID, spanId: answered?.spanId as string, sampled: true })
  expect(mistral.requests[0]?.headers.tracestate).toBe('vendor=abc')
  // Exported as protobuf by default, with the OTEL_EXPORTER_OTLP_HEADERS.
  expect(receiver.contentTypes.at(-1)).toBe('application/x-protobuf')
  expect(receiver.headers.at(-1)?.get('x-collector-key')).toBe('abc def')
  // No prompt or completion text unless GW_TRACE_CONTENT=true.
  expect(JSON.stringify(spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('vault combination')
})

test('without a traceparent a new trace starts; a stream has its attempt span and the usage', async () => {
  openai.enqueue({ kind: 'reply', usage: { prompt: 9, completion: 4 } })
  const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: true })
  expect((await readSse(res)).at(-1)).toBe('[DONE]')
  const spans = await receiver.waitFor(2)
  const [server] = byKind(spans, 2)
  const [client] = byKind(spans, 3)
  expect(server?.parentSpanId).toBe('')
  expect(server?.traceId).toMatch(/^[0-9a-f]{32}$/)
  expect(server?.traceId).not.toBe(TRACE_ID)
  expect(client?.parentSpanId).toBe(server?.spanId as string)
  expect(server?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 9, 'gen_ai.usage.output_tokens': 4, 'gen_ai.response.finish_reasons': ['stop'] })
  expect(openai.requests[0]?.headers.traceparent).toBe(`00-${server?.traceId}-${client?.spanId}-01`)
})

test('refusals before any attempt (401, policy) have a SERVER span and no CLIENT span; an unsampled parent is propagated, not exported', async () => {
  const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { authorization: 'GwKey wrong', traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` })
  expect(res.status).toBe(401)
  const [server] = await receiver.waitFor(1)
  expect(server).toMatchObject({ kind: 2, traceId: TRACE_ID, parentSpanId: PARENT_ID })
  expect(server?.attributes).toMatchObject({ 'http.response.status_code': 401, 'error.type': 'unauthorized' })
  expect(server?.attributes['gw.org_id']).toBeUndefined()

  receiver.spans.length = 0
  const unsampled = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` })
  expect(unsampled.status).toBe(200)
  await unsampled.text()
  const sent = parseTraceParent(openai.requests[0]?.headers.traceparent ?? null)
  expect(sent).toMatchObject({ traceId: TRACE_ID, sampled: false })
  expect(sent?.spanId).not.toBe(PARENT_ID)
  await Bun.sleep(100)
  expect(receiver.spans).toHaveLength(0)
})

test('the other API routes get a SERVER span named by method and route', async () => {
  expect((await gw.fetch('/v1/models', { headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` } })).status).toBe(200)
  const [span] = await receiver.waitFor(1)
  expect(span).toMatchObject({ name: 'GET /v1/models', kind: 2, traceId: TRACE_ID, parentSpanId: PARENT_ID })
  expect(span?.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/v1/models', 'http.response.status_code': 200, 'gw.org_id': 'default' })
  expect(span?.attributes['gen_ai.operation.name']).toBeUndefined()
})

describe('other settings', () => {
  test('GW_TRACE_CONTENT=true adds the messages; OTEL_EXPORTER_OTLP_PROTOCOL=http/json exports OTLP/JSON', async () => {
    const rx = await startOtlpReceiver()
    const g = await startTestGateway(
      { openai },
      { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', GW_TRACE_CONTENT: 'true' },
      FAST_EXPORT,
    )
    try {
      openai.enqueue({ kind: 'reply', text: 'the answer text' })
      const res = await g.chat({ model: 'openai/gpt-4o-mini', messages: hello })
      await res.text()
      const spans = await rx.waitFor(2)
      expect(rx.contentTypes[0]).toBe('application/json')
      const server = spans.find((s) => s.kind === 2)
      expect(server?.attributes['gen_ai.input.messages']).toContain(SECRET_PROMPT)
      expect(server?.attributes['gen_ai.output.messages']).toContain('the answer text')
      expect(server?.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0)
    } finally {
      await g.stop()
      await rx.stop()
    }
  })

  test('a collector that is down costs only counted spans; one that hangs slows no request', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const downUrl = `http://127.0.0.1:${closed.port}`
    closed.stop(true)
    const down = await startTestGateway({ openai }, { OTEL_EXPORTER_OTLP_ENDPOINT: downUrl, GW_METRICS: 'public' }, FAST_EXPORT)
    try {
      for (let i = 0; i < 5; i++) expect((await down.chat({ model: 'openai/gpt-4o-mini', messages: hello })).status).toBe(200)
      let m = readExposition(await (await fetch(`${down.url}/metrics`)).text())
      for (let i = 0; i < 100 && m.value('gw_trace_spans_dropped_total') < 10; i++) {
        await Bun.sleep(20)
        m = readExposition(await (await fetch(`${down.url}/metrics`)).text())
      }
      expect(m.value('gw_trace_spans_dropped_total')).toBe(10)
      expect(m.value('gw_trace_export_failures_total')).toBeGreaterThanOrEqual(1)
      expect(m.value('gw_trace_spans_exported_total')).toBe(0)
    } finally {
      await down.stop()
    }

    // A collector that accepts and never answers: if export were on the request path, the first
    // request would wait the whole export timeout (60 s) and this test would time out.
    let hung = 0
    const hang = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => {
        hung++
        return new Promise<Response>(() => {})
      },
    })
    const slow = await startTestGateway(
      { openai },
      { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${hang.port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '60000' },
      FAST_EXPORT,
    )
    try {
      for (let i = 0; i < 20; i++) {
        const res = await slow.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: i % 2 === 1 })
        expect(res.status).toBe(200)
        await res.text()
        await Bun.sleep(5)
      }
      expect(hung).toBeGreaterThanOrEqual(1)
    } finally {
      hang.stop(true)
      await slow.stop()
    }
  }, 20_000)
})

test('traceparent parsing follows W3C Trace Context', () => {
  expect(parseTraceParent(`00-${TRACE_ID}-${PARENT_ID}-01`)).toEqual({ traceId: TRACE_ID, spanId: PARENT_ID, sampled: true })
  expect(parseTraceParent(`00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-00`)).toEqual({ traceId: TRACE_ID, spanId: PARENT_ID, sampled: false })
  expect(parseTraceParent(`01-${TRACE_ID}-${PARENT_ID}-01-future`)).toMatchObject({ traceId: TRACE_ID })
  for (const bad of [
    null,
    '',
    `ff-${TRACE_ID}-${PARENT_ID}-01`,
    `00-${TRACE_ID}-${PARENT_ID}-01-extra`,
    `00-${'0'.repeat(32)}-${PARENT_ID}-01`,
    `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
    `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`,
    'garbage',
  ])
    expect(parseTraceParent(bad)).toBeUndefined()
})

test('the Messages, Responses and embeddings endpoints get the GenAI attributes too', async () => {
  const post = (path: string, body: object) =>
    gw.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text())
  await post('/v1/messages', { model: 'mistral/mistral-small-latest', max_tokens: 50, messages: hello })
  await post('/v1/responses', { model: 'openai/gpt-4o', input: SECRET_PROMPT })
  await post('/v1/embeddings', { model: 'openai/text-embedding-3-small', input: 'hi there' })
  const servers = byKind(await receiver.waitFor(6), 2)
  const byRoute = (route: string) => servers.find((s) => s.attributes['http.route'] === route)?.attributes
  expect(byRoute('/v1/messages')).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.response.model': 'mistral/mistral-small-latest', 'gen_ai.usage.output_tokens': 4 })
  expect(byRoute('/v1/responses')).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.usage.output_tokens': 4 })
  expect(byRoute('/v1/embeddings')).toMatchObject({ 'gen_ai.operation.name': 'embeddings', 'gen_ai.usage.input_tokens': 2, 'gen_ai.usage.output_tokens': 0 })
  const embedAttempt = byKind(receiver.spans, 3).find((s) => s.name === 'embeddings text-embedding-3-small')
  expect(embedAttempt?.attributes).toMatchObject({ 'gen_ai.operation.name': 'embeddings', 'gen_ai.provider.name': 'openai' })
})

test('a Bedrock attempt is named aws.bedrock (GenAI conventions), and its AWS secret is in no span', async () => {
  const secret = 'bedrock-span-SECRET/0123456789abcdefEXAMPLE'
  const aws = startFakeBedrock({ region: 'us-east-1', keys: { AKIAFAKESPANKEY00001: { secretAccessKey: secret } } })
  try {
    const put = await gw.admin('PUT', '/orgs/default/providers/aws', { kind: 'bedrock', region: 'us-east-1', accessKeyId: 'AKIAFAKESPANKEY00001', secretAccessKey: secret, baseUrl: aws.url })
    expect(put.status).toBe(200)
    aws.plan({ kind: 'text', text: 'Hi there!' })
    expect((await gw.chat({ model: 'aws/anthropic.claude-3-5-haiku-20241022-v1:0', messages: hello })).status).toBe(200)
    const [client] = byKind(await receiver.waitFor(2), 3)
    expect(client?.attributes).toMatchObject({ 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': 'anthropic.claude-3-5-haiku-20241022-v1:0', 'gw.attempt.outcome': 'ok' })
    expect(JSON.stringify(receiver.spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(secret)
  } finally {
    await gw.admin('DELETE', '/orgs/default/providers/aws')
    aws.stop()
  }
})

test("an Azure OpenAI attempt is named azure.ai.openai (GenAI conventions), and its key is in no span", async () => {
  const key = 'azure-span-SECRET-0123456789abcdef'
  const azure = await startFake('azure', { apiKey: key })
  try {
    expect((await gw.admin('PUT', '/orgs/default/providers/azure', { kind: 'azure', baseUrl: azure.url, apiKey: key })).status).toBe(200)
    expect((await gw.chat({ model: 'azure/gpt-4o-mini', messages: hello })).status).toBe(200)
    const [client] = byKind(await receiver.waitFor(2), 3)
    expect(client?.attributes).toMatchObject({ 'gen_ai.provider.name': 'azure.ai.openai', 'gen_ai.request.model': 'gpt-4o-mini', 'gw.attempt.outcome': 'ok' })
    expect(JSON.stringify(receiver.spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(key)
  } finally {
    await gw.admin('DELETE', '/orgs/default/providers/azure')
    await azure.stop()
  }
})

test("a request's span names the guardrails that acted (PRODUCT §19), and holds no value they hid", async () => {
  const id = 'traced-guard'
  await gw.admin('POST', '/orgs', { id, name: id })
  await gw.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
  await gw.admin('PUT', `/orgs/${id}/policy`, { guardrails: [{ name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: ['email'] }] })
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'mail ada@example.com' }] }, { authorization: `GwKey ${key}` })
  expect(res.status).toBe(200)
  await res.text()
  const spans = await receiver.waitFor(2)
  const [server] = byKind(spans, 2)
  expect(server?.attributes['gw.guardrails']).toEqual(['pii:mask:email'])
  expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('ada@example.com')
})
