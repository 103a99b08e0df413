// The schema checks report structured problems: each field at fault as a JSON Pointer with what is
// wrong with it; the 400's message is the first one's, worded as before.

import { expect, test } from 'bun:test'
import { checkRouteBody, PolicyBody } from '../../src/schemas/admin-bodies'
import { checkChatBody, validator } from '../../src/schemas/chat-body'
import { pathOf, pointer } from '../../src/schemas/problems'
import { GatewayError } from '../../src/errors'
import { checkRoute } from '../../src/admin/admin-service'

const checkPolicy = validator(PolicyBody)

const thrown = (f: () => unknown): GatewayError => {
  try {
    f()
  } catch (err) {
    if (err instanceof GatewayError) return err
    throw err
  }
  throw new Error('expected a GatewayError')
}

test('nested fields are named by their JSON Pointer, one problem per field, in the schema order', () => {
  const body = { maxTokens: 'many', budgets: [{ scope: 'org', usd: 1 }, { scope: 'team', usd: -1, period: 'week' }] }
  expect(checkPolicy.problems(body)).toEqual([
    { field: '/maxTokens', message: 'Expected integer' },
    { field: '/budgets/0/period', message: 'required' },
    { field: '/budgets/1/scope', message: 'expected one of "org", "key", "endUser"' },
    { field: '/budgets/1/usd', message: 'Expected number to be greater than 0' },
    { field: '/budgets/1/period', message: 'expected one of "day", "month", "total"' },
  ])
  expect(checkPolicy.problems({ budgets: [] })).toEqual([])
  expect(checkPolicy.problems([1])).toEqual([{ field: '', message: 'expected a JSON object' }])
})

test('the 400 carries the problems and keeps its wording: the first problem, its field without the leading slash', () => {
  const missing = thrown(() => checkPolicy({ budgets: [{ scope: 'org', usd: 1 }] }))
  expect(missing.status).toBe(400)
  expect(missing.message).toBe('Missing required field "budgets/0/period"')
  expect(missing.problems).toEqual([{ field: '/budgets/0/period', message: 'required' }])

  const wrong = thrown(() => checkChatBody({ model: 'openai/gpt-4o', messages: [{ role: 'robot', content: 'hi' }] }))
  expect(wrong.message).toBe('Invalid field "messages/0/role": expected one of "system", "developer", "user", "assistant", "tool"')
  expect(wrong.problems?.[0]).toEqual({ field: '/messages/0/role', message: 'expected one of "system", "developer", "user", "assistant", "tool"' })

  expect(thrown(() => checkRouteBody('x')).message).toBe('Request body must be a JSON object')
})

test('checks written by hand name their field the same way (a route target, a fallback trigger)', () => {
  const target = thrown(() => checkRoute('fast', { targets: [{ model: 'openai/gpt-4o' }, { model: 'gpt-4o' }] }))
  expect(target.message).toStartWith('Invalid targets[1].model "gpt-4o": expected provider/model-name')
  expect(target.problems?.map((p) => p.field)).toEqual(['/targets/1/model'])
  const trigger = thrown(() => checkRoute('fast', { targets: [{ model: 'openai/gpt-4o' }], fallback: [{ model: 'openai/gpt-4o-mini', triggers: ['sometimes'] }] }))
  expect(trigger.problems?.map((p) => p.field)).toEqual(['/fallback/0/triggers'])
})

test('pointers escape "~" and "/" and read back as the same path', () => {
  const path = ['orgs', 'a/b~c', 3, 'model']
  expect(pointer(path)).toBe('/orgs/a~1b~0c/3/model')
  expect(pathOf(pointer(path))).toEqual(path)
  expect(pathOf('')).toEqual([])
})
