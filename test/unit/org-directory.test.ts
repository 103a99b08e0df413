// The org directory's cache against a database that hangs (answers nothing, refuses nothing): a known
// entry is served after a short wait instead of holding every request; a healthy database's answer (a
// revocation) applies at once.

import { expect, test } from 'bun:test'
import type { ServiceKeyRecord } from '../../src/domain/org'
import { OrgDirectory } from '../../src/pipeline/org-directory'
import type { Store } from '../../src/store/types'

function storeWith(getServiceKey: (id: string) => Promise<ServiceKeyRecord | undefined>): Store {
  return { keys: { getServiceKey } } as unknown as Store
}

const key = (name: string) => ({ id: 'sk_1', orgId: 'acme', name }) as unknown as ServiceKeyRecord

test('a known key is served stale once its re-read takes over a second; a key unknown before waits for the database', async () => {
  let answer: (id: string) => Promise<ServiceKeyRecord | undefined> = async () => key('first')
  const dir = new OrgDirectory(storeWith((id) => answer(id)), 2000)
  expect((await dir.serviceKey('sk_1'))?.name).toBe('first')
  // The database hangs from now on.
  answer = () => new Promise(() => {})
  dir.invalidate('acme')
  await Bun.sleep(10)
  const t0 = performance.now()
  expect((await dir.serviceKey('sk_1'))?.name).toBe('first')
  expect(performance.now() - t0).toBeGreaterThanOrEqual(900)
  // Later requests while the read still hangs: the same.
  expect((await dir.serviceKey('sk_1'))?.name).toBe('first')
  // Unknown ids have nothing to fall back on: they wait (here, for ever).
  const unknown = await Promise.race([dir.serviceKey('sk_2').then(() => 'answered'), Bun.sleep(1500).then(() => 'waiting')])
  expect(unknown).toBe('waiting')
})

test('a database that answers at once: a revocation (no record any more) applies to the next request', async () => {
  let record: ServiceKeyRecord | undefined = key('live')
  const dir = new OrgDirectory(storeWith(async () => record), 2000)
  expect((await dir.serviceKey('sk_1'))?.name).toBe('live')
  record = undefined
  dir.invalidate('acme')
  await Bun.sleep(10)
  expect(await dir.serviceKey('sk_1')).toBeUndefined()
})
