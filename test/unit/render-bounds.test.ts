// Prompt rendering is bounded in work: repeated partials or a large variable repeated by its template cannot build a huge string.

import { expect, test } from 'bun:test'
import { MAX_RENDERED_CHARS, render } from '../../src/prompts/render'

test('partials that repeat partials at every level are refused once the output passes the limit', () => {
  // 7 levels with 16 copies each would be 16^7 ≈ 268 million copies of the leaf.
  const partials = new Map<string, string>()
  for (let i = 0; i < 7; i++) partials.set(`p${i}`, `{{> p${i + 1}}}`.repeat(16))
  partials.set('p7', 'x'.repeat(64))
  const started = performance.now()
  expect(() => render('{{> p0}}', partials, {})).toThrow(/larger than/)
  expect(performance.now() - started).toBeLessThan(5_000)
})

test('a large variable repeated by its template is refused before the string is built; ordinary renders are unchanged', () => {
  const big = 'v'.repeat(1_000_000)
  expect(() => render('{{x}}'.repeat(50), new Map(), { x: big })).toThrow(/larger than/)
  expect(render('{{x}}'.repeat(5), new Map(), { x: big })).toHaveLength(5_000_000)
  expect(render('Hi {{name}}, {{> sig}}', new Map([['sig', 'bye {{name}}']]), { name: 'Ada' })).toBe('Hi Ada, bye Ada')
  expect(MAX_RENDERED_CHARS).toBe(10 * 1024 * 1024)
})
