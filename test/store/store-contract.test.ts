// The Store contract, run against every implementation: SQLite always, PostgreSQL when reachable (a matrix, one copy of the tests).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { SecretBox } from '../../src/crypto/secret-box'
import { StoreConflictError, StoreUnavailableError } from '../../src/store/errors'
import { createPostgresStore } from '../../src/store/postgres'
import { PgLogStore } from '../../src/store/postgres/logs'
import { PG_MIGRATIONS } from '../../src/store/postgres/open'
import { createSqliteStore } from '../../src/store/sqlite'
import type { LogQuery, Store } from '../../src/store/types'
import { logEntry as entry } from '../helpers/log-entry'
import { freshSchema, serversFor } from '../helpers/servers'
import { postgresSubject, sqliteSubject, type StoreSubject } from '../helpers/store-subjects'

type Subject = StoreSubject

const makers: Record<'sqlite' | 'postgres', () => Promise<Subject>> = {
  sqlite: () => sqliteSubject('s'),
  postgres: () => postgresSubject('s'),
}

const pgUp = await serversFor('store contract on PostgreSQL', { postgres: true })

for (const kind of ['sqlite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !pgUp)(`${kind} store`, () => {
    let s: Subject
    let store: Store
    beforeAll(async () => {
      s = await makers[kind]()
      store = s.store
      await store.orgs.createOrg({ id: 'o1', name: 'One' })
    })
    afterAll(() => s.done())

    test('ready once migrated; ping answers', async () => {
      expect(store.kind).toBe(kind)
      expect(store.ready).toBe(true)
      await store.ping()
    })

    test('creating a record that exists is a StoreConflictError, whatever the database', async () => {
      await expect(store.orgs.createOrg({ id: 'o1', name: 'Again' })).rejects.toBeInstanceOf(StoreConflictError)
      const hash = new Uint8Array(32).fill(7)
      await store.keys.createServiceKey({ id: 'k-dup', orgId: 'o1', name: undefined, hash })
      await expect(store.keys.createServiceKey({ id: 'k-dup', orgId: 'o1', name: undefined, hash })).rejects.toBeInstanceOf(StoreConflictError)
      await store.auth.addSigningSecret({ orgId: 'o1', kid: 'kid1', secret: 's3cret' })
      await expect(store.auth.addSigningSecret({ orgId: 'o1', kid: 'kid1', secret: 'x' })).rejects.toBeInstanceOf(StoreConflictError)
      await store.prompts.createPrompt({ id: crypto.randomUUID(), orgId: 'o1', slug: 'dup', name: undefined })
      await expect(store.prompts.createPrompt({ id: crypto.randomUUID(), orgId: 'o1', slug: 'dup', name: undefined })).rejects.toThrow(
        /prompt "dup" already exists/,
      )
    })

    test('orgs, policies and provider keys round-trip; provider keys are sealed at rest', async () => {
      await store.orgs.putPolicy('o1', { requestsPerMinute: 10, allowedModels: ['openai/*'] })
      expect((await store.orgs.getOrg('o1'))?.policy).toEqual({ requestsPerMinute: 10, allowedModels: ['openai/*'] })
      expect(await store.orgs.getOrg('nope')).toBeUndefined()
      await store.orgs.putProvider('o1', { provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-plain-one', baseUrl: undefined, enabled: true })
      const p = await store.orgs.putProvider('o1', { provider: 'openai', name: 'default', weight: 1, apiKey: 'sk-plain-two', baseUrl: 'http://x', enabled: false })
      expect(p).toMatchObject({ provider: 'openai', apiKey: 'sk-plain-two', baseUrl: 'http://x', enabled: false })
      expect(await store.orgs.getProviders('o1')).toEqual([p])
      // A second, weighted key for the same provider; removing one leaves the other.
      const second = await store.orgs.putProvider('o1', { provider: 'openai', name: 'backup', weight: 0.5, apiKey: 'sk-plain-three', baseUrl: undefined, enabled: true })
      expect(await store.orgs.getProviders('o1')).toEqual([second, p])
      expect(await store.orgs.deleteProviderKey('o1', 'openai', 'backup')).toBe(true)
      expect(await store.orgs.deleteProviderKey('o1', 'openai', 'backup')).toBe(false)
      expect(await store.orgs.getProviders('o1')).toEqual([p])
      expect(JSON.stringify(await s.raw('provider_keys'))).not.toContain('sk-plain')
    })

    test('routes round-trip, one per org and name', async () => {
      const r = await store.routes.putRoute('o1', { name: 'smart', targets: [{ model: 'openai/gpt-4o', weight: 1 }], strategy: 'weighted', fallback: [] })
      expect(r).toMatchObject({ name: 'smart', strategy: 'weighted', targets: [{ model: 'openai/gpt-4o', weight: 1 }] })
      const r2 = await store.routes.putRoute('o1', { name: 'smart', targets: [{ model: 'openai/gpt-4o-mini', weight: 2 }], strategy: 'lowest-latency', fallback: [{ model: 'openai/gpt-4o' }] })
      expect(await store.routes.getRoutes('o1')).toEqual([r2])
      expect(await store.routes.deleteRoute('o1', 'smart')).toBe(true)
      expect(await store.routes.getRoutes('o1')).toEqual([])
    })

    test('service keys: hash, limits, revocation once', async () => {
      const hash = crypto.getRandomValues(new Uint8Array(32))
      const k = await store.keys.createServiceKey({ id: 'k1', orgId: 'o1', name: 'n', hash, limits: { requestsPerMinute: 5 } })
      expect(k).toMatchObject({ id: 'k1', orgId: 'o1', name: 'n', limits: { requestsPerMinute: 5 }, revokedAt: undefined })
      expect([...((await store.keys.getServiceKey('k1'))?.hash ?? [])]).toEqual([...hash])
      expect(await store.keys.revokeServiceKey('o1', 'k1')).toBe(true)
      expect(await store.keys.revokeServiceKey('o1', 'k1')).toBe(false)
      expect(await store.keys.revokeServiceKey('o2', 'k-dup')).toBe(false)
      expect((await store.keys.getServiceKey('k1'))?.revokedAt).toBeString()
      expect((await store.keys.listServiceKeys('o1')).map((x) => x.id).sort()).toEqual(['k-dup', 'k1'])
    })

    test("a service key's last use is written within about a second, as the time it was used", async () => {
      const hash = crypto.getRandomValues(new Uint8Array(32))
      await store.keys.createServiceKey({ id: 'k-used', orgId: 'o1', name: undefined, hash })
      const at = Date.UTC(2026, 10, 24, 1, 2, 3, 456)
      store.keys.touchServiceKey('k-used', at - 5000)
      store.keys.touchServiceKey('k-used', at)
      let lastUsed: string | undefined
      for (let i = 0; i < 60 && !lastUsed; i++) {
        await Bun.sleep(50)
        lastUsed = (await store.keys.getServiceKey('k-used'))?.lastUsedAt
      }
      expect(lastUsed).toBeDefined()
      expect(new Date(lastUsed as string).getTime()).toBe(at)
    })

    test("personal admin tokens: listed by user, last use noted, one deleted only through its own user", async () => {
      const ada = await store.users.createUser({ id: 'u-ada', email: 'ada@example.com', name: undefined, role: 'viewer', orgs: [] })
      const bob = await store.users.createUser({ id: 'u-bob', email: 'bob@example.com', name: undefined, role: 'viewer', orgs: [] })
      await store.users.createAdminToken({ id: 'at-1', userId: ada.id, name: 'laptop', hash: new Uint8Array([1]) })
      await store.users.createAdminToken({ id: 'at-2', userId: ada.id, name: undefined, hash: new Uint8Array([2]) })
      await store.users.createAdminToken({ id: 'at-3', userId: bob.id, name: undefined, hash: new Uint8Array([3]) })
      expect((await store.users.getAdminToken('at-1'))?.lastUsedAt).toBeUndefined()
      await store.users.touchAdminToken('at-1', '2026-11-27T10:00:00.000Z')
      expect((await store.users.getAdminToken('at-1'))?.lastUsedAt).toBe('2026-11-27T10:00:00.000Z')
      expect(await store.users.deleteAdminToken(ada.id, 'at-3')).toBe(false) // bob's
      expect(await store.users.deleteAdminToken(ada.id, 'at-1')).toBe(true)
      expect(await store.users.deleteAdminToken(ada.id, 'at-1')).toBe(false)
      expect((await store.users.listAdminTokens(ada.id)).map((t) => t.id)).toEqual(['at-2'])
      expect((await store.users.listAdminTokens(bob.id)).map((t) => t.id)).toEqual(['at-3'])
    })

    test('signing secrets and OIDC configs', async () => {
      expect((await store.auth.listSigningSecrets('o1')).map((x) => [x.kid, x.secret])).toEqual([['kid1', 's3cret']])
      expect(JSON.stringify(await s.raw('signing_secrets'))).not.toContain('s3cret')
      expect(await store.auth.deleteSigningSecret('o1', 'kid1')).toBe(true)
      expect(await store.auth.deleteSigningSecret('o1', 'kid1')).toBe(false)
      await store.auth.putOidc({ orgId: 'o1', issuer: 'https://idp', audience: 'gw', jwksUri: undefined, orgClaim: 'org' })
      const c = await store.auth.putOidc({ orgId: 'o1', issuer: 'https://idp', audience: 'gw2', jwksUri: undefined, orgClaim: undefined })
      expect(await store.auth.getOidc('o1')).toEqual(c)
      expect(await store.auth.oidcByIssuer('https://idp')).toEqual([c])
    })

    test('dashboard sessions: live until expiry or sign-out; expired ones are dropped when a session is made', async () => {
      const now = Date.now()
      await store.sessions.createSession('hash-a', now + 60_000, now)
      await store.sessions.createSession('hash-old', now + 1_000, now)
      expect((await store.sessions.session('hash-a', now))?.expiresAt).toBe(now + 60_000)
      expect(await store.sessions.session('hash-old', now + 1_000)).toBeUndefined() // expired at that time
      expect(await store.sessions.session('nope', now)).toBeUndefined()
      await expect(store.sessions.createSession('hash-a', now + 5, now)).rejects.toBeInstanceOf(StoreConflictError)
      expect(await store.sessions.deleteSession('hash-a')).toBe(true)
      expect(await store.sessions.deleteSession('hash-a')).toBe(false)
      expect(await store.sessions.session('hash-a', now)).toBeUndefined()
      await store.sessions.createSession('hash-b', now + 60_000, now + 2_000)
      expect(await store.sessions.deleteSession('hash-old')).toBe(false) // dropped when hash-b was made
      if (kind === 'postgres') expect(await s.raw('dashboard_sessions')).toEqual([expect.objectContaining({ id_hash: 'hash-b' })])
    })

    test('response cache: an entry until it expires, replaced by a later put, orgs apart; past the org bound the oldest go', async () => {
      const c = store.cache
      const now = 1_800_000_000_000
      await c.put('o1', 'k1', 'first', now + 10_000, now, 1_000)
      expect(await c.get('o1', 'k1', now)).toBe('first')
      expect(await c.get('o2', 'k1', now)).toBeUndefined()
      expect(await c.get('o1', 'k1', now + 10_000)).toBeUndefined() // expired then
      await c.put('o1', 'k1', 'second', now + 20_000, now + 1, 1_000)
      expect(await c.get('o1', 'k1', now + 15_000)).toBe('second')
      // 400 bytes each under a 1,000-byte bound: the third put drops the oldest.
      const big = (ch: string) => ch.repeat(400)
      await c.put('o1', 'a', big('a'), now + 60_000, now + 2, 1_000)
      await c.put('o1', 'b', big('b'), now + 60_000, now + 3, 1_000)
      await c.put('o1', 'c', big('c'), now + 60_000, now + 4, 1_000)
      expect(await c.get('o1', 'k1', now + 5)).toBeUndefined()
      expect(await c.get('o1', 'a', now + 5)).toBeUndefined()
      expect(await c.get('o1', 'b', now + 5)).toBe(big('b'))
      expect(await c.get('o1', 'c', now + 5)).toBe(big('c'))
      // Expired entries are dropped when the org next puts.
      await c.put('o1', 'd', 'd', now + 120_000, now + 61_000, 1_000)
      if (kind === 'postgres') expect((await s.raw('response_cache')).length).toBe(1)
    })

    test('prompt versions: concurrent saves get distinct consecutive numbers; publish; partials', async () => {
      const p = await store.prompts.createPrompt({ id: crypto.randomUUID(), orgId: 'o1', slug: 'greet', name: 'Greet' })
      const content = { systemTemplate: undefined, userTemplate: 'Hi {{name}}', variables: [{ name: 'name', type: 'string' as const, required: true }], model: 'openai/gpt-4o', temperature: 0.5, maxTokens: undefined }
      const saved = await Promise.all(Array.from({ length: 8 }, (_, i) => store.prompts.addVersion(p.id, content, `h${i}`, false)))
      expect(saved.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
      expect(await store.prompts.publish(p.id, 3)).toBe(true)
      expect(await store.prompts.publish(p.id, 99)).toBe(false)
      const found = await store.prompts.findPrompt('o1', 'greet')
      expect(found).toMatchObject({ id: p.id, slug: 'greet', publishedVersion: 3, currentVersion: 8 })
      expect(await store.prompts.findPrompt('o1', p.id)).toEqual(found)
      expect(await store.prompts.getVersion(p.id, 2)).toMatchObject({ version: 2, userTemplate: 'Hi {{name}}', variables: content.variables, temperature: 0.5, maxTokens: undefined })
      expect((await store.prompts.listPrompts('o1')).map((x) => x.slug)).toEqual(['dup', 'greet'])
      await store.prompts.putPartial('o1', 'sig', 'v1')
      await store.prompts.putPartial('o1', 'sig', 'v2')
      expect(await store.prompts.getPartials('o1')).toEqual(new Map([['sig', 'v2']]))
    })

    test('log: inserting the same entry twice keeps one row (a retried batch never duplicates)', async () => {
      await store.logs.insertLogs([entry(1, { orgId: 'dupes' }), entry(2, { orgId: 'dupes' })])
      await store.logs.insertLogs([entry(2, { orgId: 'dupes' }), entry(3, { orgId: 'dupes' })])
      expect(await store.logs.countLogs('dupes')).toBe(3)
    })

    test('log: an entry reads back whole, bodies included, only in its own org', async () => {
      const e = entry(7, { orgId: 'bodies', requestBody: { messages: [{ role: 'user', content: 'hé' }] }, responseBody: { id: 'x' } })
      await store.logs.insertLogs([e])
      expect(await store.logs.getLog('bodies', e.requestId)).toEqual(e)
      expect(await store.logs.getLog('o1', e.requestId)).toBeUndefined()
    })

    test('log: an entry holding NUL characters (a model, a metadata value, an error, a body as sent) is written with its batch and reads back as it was', async () => {
      const nul = entry(8, {
        orgId: 'nul',
        requestedModel: 'claude-haiku-4-5\u0000',
        endUserId: 'u\u0000',
        metadata: { tag: 'a\u0000b' },
        errorMessage: "Malformed JSON body: Unrecognized token '\u0000'",
        requestBody: '{"model":"x\u0000',
      })
      await store.logs.insertLogs([nul, entry(9, { orgId: 'nul' })])
      expect(await store.logs.getLog('nul', nul.requestId)).toEqual(nul)
      expect(await store.logs.countLogs('nul')).toBe(2)
    })

    test('usage roll-ups are written with the batch, once per entry even when a batch is retried; pruning keeps them', async () => {
      const day = (i: number) => entry(5000 + i, { orgId: 'usage', model: i % 2 ? 'openai/gpt-4o' : 'anthropic/claude', costUsd: i % 3 ? 0.5 : null, status: i === 0 ? 502 : 200 })
      const batch = Array.from({ length: 6 }, (_, i) => day(i))
      await store.logs.insertLogs(batch)
      await store.logs.insertLogs(batch)
      const d = batch[0]?.createdAt.slice(0, 10) as string
      const byModel = await store.logs.usage({ orgId: 'usage', groupBy: 'model', fromDay: d, toDay: d })
      expect(byModel).toEqual([
        { key: 'anthropic/claude', priced: 2, requests: 3, errors: 1, tokens: { input: 3, cachedInput: 0, cacheWrite: 0, output: 3, reasoning: 0 }, costUsd: 1 },
        { key: 'openai/gpt-4o', priced: 2, requests: 3, errors: 0, tokens: { input: 3, cachedInput: 0, cacheWrite: 0, output: 3, reasoning: 0 }, costUsd: 1 },
      ])
      expect(await store.logs.pruneLogs(Date.parse((batch[3] as { createdAt: string }).createdAt), 100)).toBeGreaterThanOrEqual(3)
      expect(await store.logs.getLog('usage', (batch[0] as { requestId: string }).requestId)).toBeUndefined()
      expect(await store.logs.getLog('usage', (batch[4] as { requestId: string }).requestId)).toBeDefined()
      expect(await store.logs.usage({ orgId: 'usage', groupBy: 'day', fromDay: d, toDay: d })).toMatchObject([{ key: d, requests: 6, errors: 1 }])
      expect(await store.logs.spend({ orgId: 'usage', dim: '', value: '', fromDay: d, toDay: d })).toBeCloseTo(2, 9)
    })

    test('log: filters and pages agree with a brute-force reading', async () => {
      const all = Array.from({ length: 60 }, (_, i) =>
        entry(100 + i, { orgId: 'pages', status: i % 7 === 0 ? 502 : 200, endUserId: i % 5 === 0 ? 'alice' : null, model: i % 4 ? 'openai/gpt-4o' : 'anthropic/claude' }),
      )
      // Two entries in the same millisecond: the request id breaks the tie, identically in every store.
      all.push(entry(900, { orgId: 'pages', createdAt: (all[10] as { createdAt: string }).createdAt }))
      await store.logs.insertLogs(all)
      const newestFirst = [...all].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.requestId < b.requestId ? 1 : -1))
      const walk = async (q: Omit<Parameters<Store['logs']['queryLogs']>[0], 'orgId' | 'limit' | 'cursor'>) => {
        const got: string[] = []
        let cursor: string | undefined
        do {
          const page = await store.logs.queryLogs({ orgId: 'pages', limit: 4, ...q, ...(cursor ? { cursor } : {}) })
          got.push(...page.data.map((e) => e.requestId))
          cursor = page.nextCursor ?? undefined
        } while (cursor)
        return got
      }
      const ids = (f: (e: (typeof all)[number]) => boolean) => newestFirst.filter(f).map((e) => e.requestId)
      expect(await walk({ metadata: [['env', 'prod'], ['shard', '1']] })).toEqual(ids((e) => e.metadata.env === 'prod' && e.metadata.shard === 1))
      expect(await walk({ metadata: [] })).toEqual(ids(() => true))
      expect(await walk({ metadata: [], status: 'error' })).toEqual(ids((e) => e.status >= 400))
      expect(await walk({ metadata: [], status: 200 })).toEqual(ids((e) => e.status === 200))
      expect(await walk({ metadata: [], user: 'alice' })).toEqual(ids((e) => e.endUserId === 'alice'))
      expect(await walk({ metadata: [['env', 'dev']], model: 'anthropic/claude' })).toEqual(
        ids((e) => e.metadata.env === 'dev' && e.model === 'anthropic/claude'),
      )
      const since = Date.parse((all[20] as { createdAt: string }).createdAt)
      const until = Date.parse((all[40] as { createdAt: string }).createdAt)
      expect(await walk({ metadata: [], since, until })).toEqual(ids((e) => Date.parse(e.createdAt) >= since && Date.parse(e.createdAt) < until))
      expect((await store.logs.queryLogs({ orgId: 'nobody', metadata: [], limit: 100 })).data).toEqual([])
    })

    test('log: a filter whose tags hardly meet looks at a bounded window per page and goes on by cursor', async () => {
      // a=x on even entries, b=y on odd ones: 1,250 entries each, meeting only where both were added.
      const all = Array.from({ length: 2500 }, (_, i) =>
        entry(5000 + i, { orgId: 'window', metadata: i === 6 || i === 2400 ? { a: 'x', b: 'y' } : i % 2 ? { b: 'y' } : { a: 'x' } }),
      )
      await store.logs.insertLogs(all)
      const want = [all[2400], all[6]].map((e) => (e as { requestId: string }).requestId)
      const first = await store.logs.queryLogs({ orgId: 'window', metadata: [['a', 'x'], ['b', 'y']], limit: 10 })
      // The newest match, then a cursor: the older one lies past the window this page looked at.
      expect(first.data.map((e) => e.requestId)).toEqual(want.slice(0, 1))
      expect(first.nextCursor).not.toBeNull()
      const got = first.data.map((e) => e.requestId)
      let cursor = first.nextCursor
      let pages = 1
      while (cursor) {
        const page = await store.logs.queryLogs({ orgId: 'window', metadata: [['a', 'x'], ['b', 'y']], limit: 10, cursor })
        got.push(...page.data.map((e) => e.requestId))
        cursor = page.nextCursor
        pages++
      }
      expect(got).toEqual(want)
      expect(pages).toBeLessThanOrEqual(3)
    })

    test('log: model, status, user and provider filters that hardly match also look at a bounded window per page', async () => {
      // 2,500 ordinary entries; two of them (the 7th and the 2,401st) match each filter below.
      const odd = (i: number) => i === 6 || i === 2400
      const all = Array.from({ length: 2500 }, (_, i) =>
        entry(20_000 + i, {
          orgId: 'sparse',
          // The answering model on one, the requested model on the other: both match `model`.
          model: i === 2400 ? 'mistral/rare' : 'openai/gpt-4o',
          requestedModel: i === 6 ? 'mistral/rare' : 'openai/gpt-4o',
          status: odd(i) ? 418 : 200,
          endUserId: odd(i) ? 'bob' : 'alice',
          provider: odd(i) ? 'mistral' : 'openai',
        }),
      )
      await store.logs.insertLogs(all)
      const want = [all[2400], all[6]].map((e) => (e as { requestId: string }).requestId)
      type Filter = Omit<Parameters<Store['logs']['queryLogs']>[0], 'orgId' | 'limit' | 'cursor' | 'metadata'>
      const walk = async (f: Filter) => {
        const pages: { ids: string[]; more: boolean }[] = []
        let cursor: string | null | undefined
        do {
          const page = await store.logs.queryLogs({ orgId: 'sparse', metadata: [], limit: 10, ...f, ...(cursor ? { cursor } : {}) })
          pages.push({ ids: page.data.map((e) => e.requestId), more: page.nextCursor !== null })
          cursor = page.nextCursor
        } while (cursor)
        return { f, pages }
      }
      // A filter with an index of its own reads just its matches: both on the first page, nothing more.
      for (const f of [{ model: 'mistral/rare' }, { status: 418 }, { status: 'error' }, { user: 'bob' }] as Filter[])
        expect(await walk(f)).toEqual({ f, pages: [{ ids: want, more: false }] })
      // Checked on another filter's window (the org's entries by time, or those of a common model): the
      // newest match, then a cursor, as the older one lies past the window the first page looked at.
      for (const f of [{ provider: 'mistral' }, { model: 'openai/gpt-4o', provider: 'mistral' }] as Filter[]) {
        const { pages } = await walk(f)
        expect({ f, first: pages[0] }).toEqual({ f, first: { ids: want.slice(0, 1), more: true } })
        expect({ f, got: pages.flatMap((p) => p.ids) }).toEqual({ f, got: want })
        expect(pages.length).toBeLessThanOrEqual(3)
      }
      // Filters that match most entries fill their pages as before.
      const page = await store.logs.queryLogs({ orgId: 'sparse', metadata: [], limit: 5, status: 'success', model: 'openai/gpt-4o' })
      expect(page.data.map((e) => e.requestId)).toEqual(all.slice(2495).reverse().map((e) => e.requestId))
      expect(page.nextCursor).not.toBeNull()
    })
  })
}

describe.skipIf(!pgUp)('postgres only', () => {
  test('three stores started together on an empty schema migrate once, under the lock', async () => {
    const schema = await freshSchema()
    try {
      const stores = Array.from({ length: 3 }, () => createPostgresStore(schema.url, new SecretBox('s')))
      await Promise.all(stores.map((st) => st.whenReady))
      await stores[0]?.orgs.createOrg({ id: 'x', name: 'x' })
      expect(await stores[2]?.orgs.getOrg('x')).toMatchObject({ id: 'x' })
      const sql = new SQL(schema.url, { max: 1 })
      expect(await sql`SELECT version FROM gw_migrations ORDER BY version`).toEqual(PG_MIGRATIONS.map((_, i) => ({ version: i + 1 })))
      await sql.close()
      await Promise.all(stores.map((st) => st.close()))
    } finally {
      await schema.drop()
    }
  })

  test('an unreachable server: not ready, ping and queries fail with StoreUnavailableError', async () => {
    const store = createPostgresStore('postgres://postgres@127.0.0.1:1/none', new SecretBox('s'))
    try {
      expect(store.ready).toBe(false)
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(store.orgs.getOrg('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    } finally {
      await store.close()
    }
  })

  test('a two-key filter starts from the rarer tag and looks the other up on its whole key; a pair matching nothing reads no entries', async () => {
    const schema = await freshSchema()
    const store = createPostgresStore(schema.url, new SecretBox('s'))
    const sql = new SQL(schema.url, { max: 1 })
    // Index entries read from the tag table, counted on one connection that the queries below use too.
    const tagReads = async () => {
      await sql`SELECT pg_stat_force_next_flush()`
      await sql`SELECT pg_stat_clear_snapshot()`
      const [row] = await sql`SELECT idx_tup_read::int AS n FROM pg_stat_user_indexes WHERE indexrelname = 'request_log_tags_pkey' AND schemaname = ${schema.schema}`
      return Number(row.n)
    }
    const logs = new PgLogStore(sql)
    try {
      await store.whenReady
      const all = Array.from({ length: 3000 }, (_, i) => entry(i, { metadata: { env: `e${i % 100}`, shard: i % 3 } }))
      await store.logs.insertLogs(all)
      // No ANALYZE: a freshly filled table without statistics must not change the plan's shape.
      const expected = all.filter((e) => e.metadata.env === 'e4' && e.metadata.shard === 1).reverse().map((e) => e.requestId)
      const before = await tagReads()
      const page = await logs.queryLogs({ orgId: 'o1', metadata: [['shard', '1'], ['env', 'e4']], limit: 50 })
      expect(page.data.map((e) => e.requestId)).toEqual(expected)
      expect((await logs.queryLogs({ orgId: 'o1', metadata: [['shard', '1'], ['env', 'nope']], limit: 50 })).data).toEqual([])
      // Choosing reads at most 200 entries per tag (twice 200 of shard=1, env=e4's 30); walking env=e4
      // and looking each entry up costs about 60 more; env=nope has none, so nothing is walked.
      // Driving from shard would read 4,000 in all; scanning shard's range for every env entry, 30,000.
      expect((await tagReads()) - before).toBeLessThan(1000)
      // Pruning an entry takes its tags with it.
      expect(await store.logs.pruneLogs(Date.parse(entry(1000).createdAt), 5000)).toBe(1000)
      expect(Number((await sql`SELECT count(*) AS n FROM request_log_tags`)[0].n)).toBe(4000)
    } finally {
      await sql.close()
      await store.close()
      await schema.drop()
    }
  })

  test('every filter of a log page reads its own index of request_logs, never a scan of the table', async () => {
    const schema = await freshSchema()
    const store = createPostgresStore(schema.url, new SecretBox('s'))
    const sql = new SQL(schema.url, { max: 1 })
    /** Scans of request_logs so far: sequential, and per index. */
    const scans = async () => {
      await sql`SELECT pg_stat_force_next_flush()`
      await sql`SELECT pg_stat_clear_snapshot()`
      const [t] = await sql`SELECT seq_scan::int AS n FROM pg_stat_user_tables WHERE relname = 'request_logs' AND schemaname = ${schema.schema}`
      const rows = await sql`SELECT indexrelname AS name, idx_scan::int AS n FROM pg_stat_user_indexes WHERE relname = 'request_logs' AND schemaname = ${schema.schema}`
      return { seq: Number(t.n), index: Object.fromEntries(rows.map((r: { name: string; n: number }) => [r.name, Number(r.n)])) as Record<string, number> }
    }
    const logs = new PgLogStore(sql)
    try {
      await store.whenReady
      await store.logs.insertLogs(
        Array.from({ length: 3000 }, (_, i) => entry(i, { status: i % 10 ? 200 : 502, endUserId: `u${i % 50}`, model: `m${i % 20}`, requestedModel: `m${i % 20}` })),
      )
      // Another org, busier, in the same time span: what a walk by time alone would wade through.
      await store.logs.insertLogs(Array.from({ length: 9000 }, (_, i) => entry(10_000 + i, { orgId: 'o2', createdAt: new Date(1_700_000_000_000 + i * 333).toISOString() })))
      // With statistics, as autovacuum gathers them on a table this size (a table without any is planned
      // for a handful of rows: a bitmap scan and a sort, until it is analyzed).
      await sql`ANALYZE request_logs`
      const cases: [Partial<LogQuery>, string[]][] = [
        [{}, ['request_logs_org_time']],
        // The page, then its window's edge (the time index of every org is a fair way to that).
        [{ since: 1 }, ['request_logs_org_time', 'request_logs_time']],
        [{ model: 'm3' }, ['request_logs_org_model', 'request_logs_org_requested_model']],
        [{ status: 502 }, ['request_logs_org_status']],
        [{ status: 'error' }, ['request_logs_org_failed']],
        // Nine entries in ten succeed: the org's entries by time, skipping the failures, are as good.
        [{ status: 'success' }, ['request_logs_org_time']],
        [{ user: 'u7', status: 'error' }, ['request_logs_org_user']],
        [{ provider: 'openai' }, ['request_logs_org_time']],
      ]
      for (const [filter, index] of cases) {
        const before = await scans()
        await logs.queryLogs({ orgId: 'o1', metadata: [], limit: 50, ...filter })
        const after = await scans()
        const used = Object.keys(after.index).filter((k) => k !== 'request_logs_pkey' && (after.index[k] as number) > (before.index[k] ?? 0))
        expect({ filter, seq: after.seq - before.seq, some: used.length > 0, others: used.filter((k) => !index.includes(k)) }).toEqual({ filter, seq: 0, some: true, others: [] })
      }
    } finally {
      await sql.close()
      await store.close()
      await schema.drop()
    }
  })

  test('roll-ups wait in usage_pending, counted by reports, until one instance folds them, once; a batch written in part counts only its new entries', async () => {
    const schema = await freshSchema()
    const stores = [createPostgresStore(schema.url, new SecretBox('s')), createPostgresStore(schema.url, new SecretBox('s'))] as const
    const sql = new SQL(schema.url, { max: 1 })
    try {
      await Promise.all(stores.map((st) => st.whenReady))
      const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => entry(from + i, { endUserId: `u${(from + i) % 7}`, costUsd: 0.25 }))
      const d = entry(0).createdAt.slice(0, 10)
      const totals = async () => (await stores[1].logs.usage({ orgId: 'o1', groupBy: 'day', fromDay: d, toDay: d }))[0]
      await stores[0].logs.insertLogs(batch(0, 600))
      // The same entries again through the other instance, with 100 new ones (a spool replayed after a partial write).
      await stores[1].logs.insertLogs(batch(500, 200))
      await Promise.all([stores[0].logs.insertLogs(batch(700, 300)), stores[1].logs.insertLogs(batch(1000, 300))])
      expect(await totals()).toMatchObject({ requests: 1300, costUsd: 325 })
      const users = await stores[0].logs.usage({ orgId: 'o1', groupBy: 'endUser', fromDay: d, toDay: d })
      expect(users.reduce((n, r) => n + r.requests, 0)).toBe(1300)
      // Both instances fold at once: every pending row lands once.
      await Promise.all(stores.map((st) => (st.logs as PgLogStore).foldPending()))
      expect(Number((await sql`SELECT count(*) AS n FROM usage_pending`)[0].n)).toBe(0)
      expect(await totals()).toMatchObject({ requests: 1300, costUsd: 325 })
      expect(await stores[0].logs.usage({ orgId: 'o1', groupBy: 'endUser', fromDay: d, toDay: d })).toEqual(users)
      // An entry deleted by hand leaves its tags (no foreign key): written again, it is stored and counted once more.
      await sql`DELETE FROM request_logs WHERE request_id = ${entry(5).requestId}`
      await stores[0].logs.insertLogs(batch(5, 1))
      expect(await stores[1].logs.getLog('o1', entry(5).requestId)).toMatchObject({ endUserId: 'u5' })
      expect(await totals()).toMatchObject({ requests: 1301 })
    } finally {
      await sql.close()
      await Promise.all(stores.map((st) => st.close()))
      await schema.drop()
    }
  })
})
