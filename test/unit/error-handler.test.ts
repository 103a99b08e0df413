// The error mapping: a uniqueness clash lost to another writer (e.g. the CLI in another process) is a 409, not a 500.

import { expect, test } from 'bun:test'
import { errorResponse } from '../../src/http/error-handler'

test('a UNIQUE constraint failure from the store is 409 in the seed shape; other errors stay 500', async () => {
  const req = new Request('http://gw.test/admin/orgs/default/prompts', { method: 'POST' })
  const clash = errorResponse(new Error('UNIQUE constraint failed: prompts.org_id, prompts.slug'), req, 'gw')
  expect(clash.status).toBe(409)
  expect((await clash.json()) as object).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('Already exists') })
  const orig = console.error
  console.error = () => {}
  try {
    const other = errorResponse(new Error('disk I/O error'), req, 'gw')
    expect(other.status).toBe(500)
    expect(await other.text()).not.toContain('disk I/O')
  } finally {
    console.error = orig
  }
})
