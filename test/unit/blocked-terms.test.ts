// The blocked-term matcher (src/policy/blocked-terms.ts): every term found case-insensitively in any
// string or key, in one pass, whatever the shape and size of the request.

import { expect, test } from 'bun:test'
import { TermMatcher } from '../../src/policy/blocked-terms'

const find = (terms: string[], ...values: unknown[]) => new TermMatcher(terms).find(values)

test('terms are found case-insensitively anywhere: overlapping, inside one another, in keys, deep inside', async () => {
  expect(await find(['she', 'hers'], 'USHERS')).toBe('she')
  // 'he' ends where 'she' does and is listed first.
  expect(await find(['he', 'she', 'hers'], 'USHERS')).toBe('he')
  expect(await find(['abcd', 'bc'], 'xabcx')).toBe('bc')
  expect(await find(['aab'], 'aaab')).toBe('aab')
  expect(await find(['Project Falcon'], { messages: [{ content: [{ text: 'about project FALCON?' }] }] })).toBe('Project Falcon')
  expect(await find(['secret'], { tools: [{ parameters: { properties: { SecretField: {} } } }] })).toBe('secret')
  expect(await find(['secret'], { a: ['no', { b: 'nothing here' }] }, undefined, 3)).toBeUndefined()
  // Two terms ending at the same place: the one listed first.
  expect(await find(['falcon', 'project falcon'], 'project falcon')).toBe('falcon')
  expect(await find(['project falcon', 'falcon'], 'project falcon')).toBe('project falcon')
})

test('a term across the pieces a long string is read in, beyond the Basic Multilingual Plane, and an empty term', async () => {
  const term = 'needle-in-the-haystack'
  for (const at of [65_536 - 5, 65_536, 131_072 - 1]) expect(await find([term], `${'x'.repeat(at)}${term.toUpperCase()}${'y'.repeat(10)}`)).toBe(term)
  // 𐐀 (U+10400) lower-cases to 𐐨 (U+10428): both halves of the pair are read together.
  expect(await find(['𐐨'], `${'x'.repeat(65_535)}𐐀`)).toBe('𐐨')
  expect(await find(['', 'x'], 'anything')).toBe('')
  expect(await find([''], [])).toBeUndefined()
})

test('an array of 1,000,000 elements and 1,000 terms over 10 MB: no RangeError, and the event loop is given back', async () => {
  const terms = Array.from({ length: 1_000 }, (_, i) => `term-${i}-zq`)
  expect(await find(terms, Array.from({ length: 1_000_000 }, () => 0))).toBeUndefined()
  expect(await find(terms, [...Array.from({ length: 999_999 }, () => 'x'), 'a TERM-999-ZQ'])).toBe('term-999-zq')
  const tools = Array.from({ length: 1_000 }, (_, i) => ({ description: `tool ${i} `.repeat(1_000) }))
  let longest = 0
  let last = performance.now()
  const timer = setInterval(() => {
    longest = Math.max(longest, performance.now() - last)
    last = performance.now()
  }, 1)
  try {
    expect(await find(terms, tools)).toBeUndefined()
  } finally {
    clearInterval(timer)
  }
  expect(longest).toBeLessThan(100)
})
