// The one wrapper every admin route goes through (docs/architecture.md, "Roles and the audit log"): a route
// added later is role-checked and, when its own code records nothing, still audited once, its secrets masked.

import { expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { AdminService } from '../../src/admin/admin-service'
import { SecretBox } from '../../src/crypto/secret-box'
import { ClientAddresses } from '../../src/http/client-address'
import { errorResponse } from '../../src/http/error-handler'
import { operationRoutes, ownOperations } from '../../src/http/operation-routes'
import { AdminGuard, guarded, json } from '../../src/http/routes/admin'
import { createSqliteStore } from '../../src/store/sqlite'

const TOKEN = 'unit-admin-token-0123456789'

test('a new change operation is refused to a viewer, and audited once (generic entry, secrets masked) for an owner', async () => {
  const store = createSqliteStore(':memory:', new SecretBox('s'))
  try {
    const admin = new AdminService(store)
    await store.orgs.createOrg({ id: 'acme', name: 'Acme' })
    const guard = new AdminGuard(TOKEN, undefined, new ClientAddresses([]), admin.users)
    const OPS = ownOperations('admin', [
      { id: 'putWidget', method: 'PUT', path: '/admin/orgs/:org/widgets/:name', summary: 'A route added after the wrapper' },
      { id: 'getWidget', method: 'GET', path: '/admin/orgs/:org/widgets/:name', summary: 'Its read' },
    ])
    let ran = 0
    const app = new Elysia()
      .onError(({ error, request }) => errorResponse(error, request, undefined))
      .use(
        operationRoutes(
          'widgets',
          OPS,
          guarded(OPS, guard, admin, {
            putWidget: async (c) => {
              ran++
              return json(c.request, { name: c.params.name, apiKey: 'sk-widget-secret-000000000000' })
            },
            getWidget: async (c) => json(c.request, { name: c.params.name }),
          }),
        ),
      )
    const viewer = await admin.users.create({ email: 'v@example.com', role: 'viewer', orgs: ['acme'] })
    const { token } = await admin.users.createToken(viewer.id)
    const call = (method: string, auth: string) => app.handle(new Request('http://gw.test/admin/orgs/acme/widgets/w1', { method, headers: { authorization: `Bearer ${auth}` } }))

    expect((await call('GET', token)).status).toBe(200)
    const refused = await call('PUT', token)
    expect(refused.status).toBe(403)
    expect(ran).toBe(0)
    const before = (await store.audit.query({ limit: 50 })).data.length

    expect((await call('PUT', TOKEN)).status).toBe(200)
    const entries = (await store.audit.query({ limit: 50 })).data
    expect(entries.length).toBe(before + 1)
    expect(entries[0]).toMatchObject({ action: 'putWidget', org: 'acme', target: 'name:w1', actor: { kind: 'admin-token' }, before: null, after: { name: 'w1', apiKey: '****' } })
    expect(JSON.stringify(entries)).not.toContain('sk-widget-secret')
  } finally {
    await store.close()
  }
})
