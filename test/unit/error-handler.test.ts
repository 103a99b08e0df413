// The error mapping: a uniqueness clash lost to another writer (e.g. the CLI in another process) is a 409, not a 500.

import { expect, test } from 'bun:test'
import { errorResponse } from '../../src/http/error-handler'
import { StoreConflictError, StoreUnavailableError } from '../../src/store/errors'

test('a conflict from the store is 409 in the seed shape, an unreachable store 503; other errors stay 500', async () => {
  const req = new Request('http://gw.test/admin/orgs/default/prompts', { method: 'POST' })
  const clash = errorResponse(new StoreConflictError('prompt "x" already exists'), req, 'gw')
  expect(clash.status).toBe(409)
  expect((await clash.json()) as object).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('Already exists') })
  const down = errorResponse(new StoreUnavailableError('connection refused'), req, 'gw')
  expect(down.status).toBe(503)
  expect(down.headers.get('retry-after')).toBe('1')
  expect((await down.json()) as object).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('database is unreachable') })
  // SQLite's own message text is no longer parsed: only the store's typed error says "conflict".
  const orig = console.error
  console.error = () => {}
  try {
    expect(errorResponse(new Error('UNIQUE constraint failed: prompts.slug'), req, 'gw').status).toBe(500)
    const other = errorResponse(new Error('disk I/O error'), req, 'gw')
    expect(other.status).toBe(500)
    expect(await other.text()).not.toContain('disk I/O')
  } finally {
    console.error = orig
  }
})
