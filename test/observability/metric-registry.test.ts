// The hand-written Prometheus registry: what an independent parser reads back from its exposition.

import { expect, test } from 'bun:test'
import { MetricRegistry } from '../../src/observability/metric-registry'
import { readExposition } from '../helpers/prometheus'

test('label values are escaped (quotes, backslashes, newlines) and read back intact', () => {
  const r = new MetricRegistry()
  const c = r.counter('t_total', 'A "help" text\nwith a newline', ['v'])
  const nasty = 'a "quoted" \\ back\nslash'
  c.inc([nasty], 2)
  c.inc([nasty])
  c.inc(['plain'], 0.5)
  const m = readExposition(r.render())
  expect(m.value('t_total', { v: nasty })).toBe(3)
  expect(m.value('t_total', { v: 'plain' })).toBe(0.5)
})

test('histogram buckets are cumulative, values on a bound fall in that bucket, +Inf holds the count', () => {
  const r = new MetricRegistry()
  const h = r.histogram('h_seconds', 'h', ['a'], [0.1, 1, 10])
  for (const v of [0.05, 0.1, 0.5, 1, 20, 30]) h.observe(['x'], v)
  const m = readExposition(r.render())
  const x = m.histogram('h_seconds', { a: 'x' })
  expect(x).toEqual({ count: 6, sum: 51.65, buckets: new Map([['0.1', 2], ['1', 4], ['10', 4], ['+Inf', 6]]) })
})

test('collected gauges are read at each scrape', () => {
  const r = new MetricRegistry()
  let depth = 3
  r.collected('q_depth', 'q', 'gauge', [], () => [[[], depth]])
  expect(readExposition(r.render()).value('q_depth')).toBe(3)
  depth = 7
  expect(readExposition(r.render()).value('q_depth')).toBe(7)
})
