// The OTLP encoder and the batch exporter on their own: every attribute type and size survives an
// independent protobuf decoder (protobufjs) and OTLP/JSON alike; the queue is bounded.

import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { encodeJson, encodeProtobuf, type SpanData } from '../../src/observability/otlp-encode'
import { TraceExporter, traceResource } from '../../src/observability/trace-exporter'
import { decodeOtlp } from '../helpers/otlp-receiver'

const span = (i: number, attributes: SpanData['attributes']): SpanData => ({
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: `00f067aa0ba902${String(i).padStart(2, '0')}`,
  parentSpanId: i ? '00f067aa0ba90200' : undefined,
  traceState: i ? undefined : 'vendor=x',
  name: `span ${i} ✓`,
  kind: i ? 3 : 2,
  startNs: 1_763_900_000_123_456_789n,
  endNs: 1_763_900_000_987_654_321n,
  attributes,
  status: i ? { code: 2, message: 'timeout' } : { code: 0 },
})

test('protobuf and JSON bodies decode to the same spans, whatever the attribute types and sizes', () => {
  const long = 'x'.repeat(200)
  const huge = 'é'.repeat(20_000)
  const attrs = { s: 'plain', u: 'héllo ✓ 日本', long, huge, int: 42, neg: -7, big: 2 ** 40, dbl: 0.000171, t: true, f: false, arr: ['stop', 'length'], empty: '' }
  const spans = [span(0, attrs), span(1, { only: 'one' })]
  const resource = { attributes: { 'service.name': 'gw' }, scope: { name: 'gw', version: '1' } }
  for (const [body, type] of [
    [encodeProtobuf(resource, spans), 'application/x-protobuf'],
    [new TextEncoder().encode(encodeJson(resource, spans)), 'application/json'],
  ] as const) {
    const got = decodeOtlp(body, type)
    expect(got).toHaveLength(2)
    expect(got[0]).toMatchObject({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba90200',
      parentSpanId: '',
      name: 'span 0 ✓',
      kind: 2,
      startNs: 1_763_900_000_123_456_789n,
      endNs: 1_763_900_000_987_654_321n,
      resource: { 'service.name': 'gw' },
    })
    expect(got[0]?.attributes).toEqual(attrs)
    expect(got[1]).toMatchObject({ parentSpanId: '00f067aa0ba90200', kind: 3, status: { code: 2, message: 'timeout' }, attributes: { only: 'one' } })
  }
})

test('the queue is bounded: past it spans are dropped and counted, and a failed export counts its batch', async () => {
  const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }).otel as NonNullable<ReturnType<typeof loadConfig>['otel']>
  let calls = 0
  const refuse = (async () => {
    calls++
    return new Response('no', { status: 503 })
  }) as unknown as typeof fetch
  const exporter = new TraceExporter(config, traceResource(config), { maxQueue: 100, maxBatch: 40, intervalMs: 60_000 }, refuse)
  exporter.add(Array.from({ length: 150 }, (_, i) => span(i % 90, {})))
  expect(exporter.stats.dropped).toBe(50)
  await exporter.close()
  expect(calls).toBe(3)
  expect(exporter.stats).toEqual({ exported: 0, dropped: 150, failedExports: 3 })
})
