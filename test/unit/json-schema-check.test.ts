// The JSON-schema checker behind the log's structuredOutput.matchesSchema.

import { expect, test } from 'bun:test'
import { matchesSchema } from '../../src/json-schema-check'

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
