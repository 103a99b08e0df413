// Schema rewrites for native structured output: when OpenAI strict mode is safe, closing objects.

import { expect, test } from 'bun:test'
import { closeObjects, strictCompatible } from '../../src/providers/json-output'

const nested = {
  type: 'object',
  properties: { a: { type: 'string' }, b: { type: 'object', properties: { c: { type: 'number' } }, required: ['c'] } },
  required: ['a', 'b'],
}

test('strict mode is safe when every object requires all its properties and stays closed', () => {
  expect(strictCompatible(nested)).toBe(true)
  expect(strictCompatible({ ...nested, required: ['a'] })).toBe(false)
  expect(strictCompatible({ ...nested, additionalProperties: true })).toBe(false)
  const openInner = { ...nested, properties: { ...nested.properties, b: { type: 'object', properties: { c: {} } } } }
  expect(strictCompatible(openInner)).toBe(false)
  expect(strictCompatible({ type: 'array', items: nested })).toBe(false)
})

test('closeObjects closes every object, nested ones and array items included, without touching the input', () => {
  const schema = { type: 'object', properties: { list: { type: 'array', items: { type: 'object', properties: {} } } } }
  expect(closeObjects(schema)).toEqual({
    type: 'object',
    properties: { list: { type: 'array', items: { type: 'object', properties: {}, additionalProperties: false } } },
    additionalProperties: false,
  })
  expect(schema).not.toHaveProperty('additionalProperties')
})
