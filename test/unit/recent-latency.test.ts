// RecentLatency (src/pipeline/route-choice.ts): what lowest-latency routes read, per org and model.

import { expect, test } from 'bun:test'
import { RecentLatency } from '../../src/pipeline/route-choice'

test('a weighted mean per org and model, forgotten after five minutes; each org keeps at most 10,000 models', () => {
  let now = 1_000_000
  const l = new RecentLatency(() => now)
  l.observe('o1', 'openai/gpt-4o', 100)
  l.observe('o2', 'openai/gpt-4o', 300)
  l.observe('o1', 'openai/gpt-4o', 200)
  expect(l.of('o1', 'openai/gpt-4o')).toBeCloseTo(120, 9)
  expect(l.of('o2', 'openai/gpt-4o')).toBe(300)
  expect(l.of('o1', 'anthropic/claude-haiku-4-5')).toBeUndefined()
  now += 5 * 60_000
  expect(l.of('o1', 'openai/gpt-4o')).toBeUndefined()
  // A figure older than the window is replaced, not averaged in.
  l.observe('o1', 'openai/gpt-4o', 50)
  expect(l.of('o1', 'openai/gpt-4o')).toBe(50)
  for (let i = 0; i < 10_000; i++) l.observe('o3', `m/${i}`, i)
  expect(l.of('o3', 'm/0')).toBe(0)
  l.observe('o3', 'm/new', 1)
  expect(l.of('o3', 'm/0')).toBeUndefined()
  expect(l.of('o3', 'm/1')).toBe(1)
  expect(l.of('o1', 'openai/gpt-4o')).toBe(50)
})
