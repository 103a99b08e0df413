// The JSON-schema checker behind the log's structuredOutput.matchesSchema.

import { expect, test } from 'bun:test'
import { MAX_SCHEMA_LITERALS, MAX_SCHEMA_NODES, matchesSchema, schemaProblem } from '../../src/json-schema-check'

const person = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    role: { enum: ['admin', 'user'] },
    tags: { type: 'array', items: { type: 'string' } },
    nick: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    home: { $ref: '#/$defs/place' },
  },
  required: ['name', 'age'],
  additionalProperties: false,
  $defs: { place: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
}

test.each([
  [{ name: 'Ada', age: 36 }, true],
  [{ name: 'Ada', age: 36, role: 'admin', tags: ['x'], nick: null, home: { city: 'London' } }, true],
  [{ name: 'Ada' }, false],
  [{ name: 'Ada', age: 36.5 }, false],
  [{ name: 'Ada', age: '36' }, false],
  [{ name: 'Ada', age: 36, role: 'root' }, false],
  [{ name: 'Ada', age: 36, tags: ['x', 1] }, false],
  [{ name: 'Ada', age: 36, nick: 3 }, false],
  [{ name: 'Ada', age: 36, home: {} }, false],
  [{ name: 'Ada', age: 36, extra: true }, false],
  [['Ada', 36], false],
  [null, false],
])('%j → %p', (value, ok) => {
  expect(matchesSchema(value, person)).toBe(ok)
})

test('objects without additionalProperties: false take other properties', () => {
  expect(matchesSchema({ a: 1, b: 2 }, { type: 'object', properties: { a: { type: 'number' } } })).toBe(true)
  expect(matchesSchema({ a: 1, b: 'x' }, { type: 'object', additionalProperties: { type: 'number' } })).toBe(false)
})

test('type lists and const', () => {
  expect(matchesSchema(null, { type: ['string', 'null'] })).toBe(true)
  expect(matchesSchema(3, { type: ['string', 'null'] })).toBe(false)
  expect(matchesSchema('v1', { const: 'v1' })).toBe(true)
  expect(matchesSchema('v2', { const: 'v1' })).toBe(false)
})

test('schemas whose check cannot be bounded are refused with a reason', () => {
  expect(schemaProblem({ anyOf: [{ $ref: '#' }, { $ref: '#' }] })).toMatch(/loop back/)
  expect(schemaProblem({ allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { oneOf: [{ $ref: '#' }] } } })).toMatch(/loop back/)
  expect(schemaProblem({ $ref: 'https://example.com/s.json' })).toMatch(/not a reference inside the schema/)
  expect(schemaProblem({ $ref: '#/$defs/missing' })).toMatch(/not a reference inside the schema/)
  const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: MAX_SCHEMA_NODES + 1 }, (_, i) => [`p${i}`, {}])) }
  expect(schemaProblem(wide)).toMatch(/more than/)
  // Recursion through a property or an item descends into the value, so it always ends.
  expect(schemaProblem({ type: 'object', properties: { next: { $ref: '#' } } })).toBeUndefined()
  expect(schemaProblem(person)).toBeUndefined()
})

test('alternatives that double at each level of a deep value are decided in linear work', () => {
  // Each level offers two distinct alternatives that both recurse; a naive checker tries 2^depth paths.
  const node = { type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] }
  const schema = { anyOf: [{ $ref: '#/$defs/x' }, { $ref: '#/$defs/y' }], $defs: { x: node, y: { ...node } } }
  let value: unknown = 1
  for (let i = 0; i < 200; i++) value = { a: value }
  const started = performance.now()
  expect(matchesSchema(value, schema)).toBe(false)
  let good: unknown = {}
  for (let i = 0; i < 200; i++) good = { a: good }
  expect(matchesSchema(good, { type: 'object', properties: { a: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } } })).toBe(true)
  expect(performance.now() - started).toBeLessThan(2_000)
})

test('an answer too large to check within the step budget is reported as not checked (null)', () => {
  const items = Array.from({ length: 150_000 }, (_, i) => i)
  expect(matchesSchema(items, { type: 'array', items: { type: 'integer' } })).toBeNull()
  expect(matchesSchema({ anyOf: [] }, { anyOf: [{ $ref: '#' }] })).toBeNull()
})

test('a value nested 6,000 levels deep is checked without recursion', () => {
  let deep: unknown = {}
  for (let i = 0; i < 6_000; i++) deep = { a: deep }
  const recursive = { type: 'object', properties: { a: { $ref: '#' } } }
  expect(matchesSchema(deep, recursive)).toBe(true)
  expect(matchesSchema(deep, { type: 'object', properties: { a: { anyOf: [{ $ref: '#' }, { type: 'string' }] } } })).toBe(true)
  let arrays: unknown = 1
  for (let i = 0; i < 6_000; i++) arrays = [arrays]
  expect(matchesSchema(arrays, { items: { $ref: '#' }, type: ['array', 'string'] })).toBe(false)
})

test('a chain of 4,000 $refs is checked (and refused when it loops) without recursion', () => {
  const defs: Record<string, unknown> = { a4000: { type: 'integer' } }
  for (let i = 0; i < 4_000; i++) defs[`a${i}`] = { $ref: `#/$defs/a${i + 1}` }
  expect(matchesSchema(1, { $ref: '#/$defs/a0', $defs: defs })).toBe(true)
  expect(matchesSchema('1', { $ref: '#/$defs/a0', $defs: defs })).toBe(false)
  expect(schemaProblem({ $ref: '#/$defs/a0', $defs: { ...defs, a4000: { $ref: '#' } } })).toMatch(/loop back/)
})

test('enum and const work is bounded: values are capped at request time, lookups are counted', () => {
  const tooMany = { type: 'array', items: { enum: Array.from({ length: MAX_SCHEMA_LITERALS }, (_, i) => i) } }
  expect(schemaProblem(tooMany)).toMatch(/"enum" and "const" values hold more than 100000 JSON values/)
  expect(schemaProblem({ properties: { a: { const: Array.from({ length: MAX_SCHEMA_LITERALS }, () => 0) } } })).toMatch(/more than 100000/)
  // A properties object too wide to spread into a call's arguments: refused, not a RangeError.
  const wide = { properties: Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`p${i}`, {}])) }
  expect(schemaProblem(wide)).toMatch(/more than 5000 subschemas/)

  // 99,000 strings and a 1,000-item answer: one set lookup per item, not 99,000 comparisons.
  const value = (i: number) => `value-${String(i).padStart(74, '0')}`
  const big = { type: 'array', items: { enum: Array.from({ length: 99_000 }, (_, i) => value(i)) } }
  expect(schemaProblem(big)).toBeUndefined()
  const answer = Array.from({ length: 1_000 }, (_, i) => value(i * 97))
  expect(matchesSchema(answer, big)).toBe(true)
  expect(matchesSchema([...answer, value(99_000)], big)).toBe(false)
  // Object values are compared one by one, each charged by its size: past the budget, not checked.
  const objects = { type: 'array', items: { enum: Array.from({ length: 9_000 }, (_, i) => ({ id: i, tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] })) } }
  expect(matchesSchema([{ id: 3, tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] }], objects)).toBe(true)
  const late = Array.from({ length: 1_000 }, (_, i) => ({ id: 8_990 + (i % 10), tags: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] }))
  expect(matchesSchema(late.slice(0, 5), objects)).toBe(true)
  expect(matchesSchema(late, objects)).toBeNull()
  expect(matchesSchema([{ a: 1 }, 'x'], { type: 'array', items: { enum: ['x', { a: 1 }] } })).toBe(true)
})
