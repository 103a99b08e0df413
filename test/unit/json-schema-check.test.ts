// The JSON-schema checker behind the log's structuredOutput.matchesSchema.

import { expect, test } from 'bun:test'
import { MAX_SCHEMA_NODES, matchesSchema, schemaProblem } from '../../src/json-schema-check'

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
