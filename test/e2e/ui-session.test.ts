// Dashboard sign-in over HTTP: the session cookie, CSRF on changes, framing refused, sign-out (kept in the store, across restarts and instances), expiry.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { createSqliteStore } from '../../src/store/sqlite'
import { SessionKeeper } from '../../src/ui/session'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'
import { freshSchema, serversFor, TEST_SECRET, TEST_STORE } from '../helpers/servers'

let gw: TestGateway

beforeAll(async () => {
  gw = await startTestGateway()
})
afterAll(() => gw.stop())

async function signIn(token = ADMIN_TOKEN, headers: Record<string, string> = {}) {
  return fetch(`${gw.url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ token }) })
}

const cookieFrom = (res: Response) => (res.headers.get('set-cookie') ?? '').split(';')[0] as string

test('GET /ui serves the dashboard page and its bundled assets from gw itself', async () => {
  const res = await fetch(`${gw.url}/ui`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/html')
  const html = await res.text()
  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string).filter((a) => a !== 'data:,')
  expect(assets.length).toBeGreaterThanOrEqual(1)
  for (const a of assets) {
    expect(a).toStartWith('/') // same origin, no CDN
    expect((await fetch(`${gw.url}${a}`)).status).toBe(200)
  }
})

test('every answer under /ui forbids framing: the page, its assets, the session API and its errors', async () => {
  const html = await (await fetch(`${gw.url}/ui`)).text()
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1] as string)
  expect(assets.length).toBeGreaterThanOrEqual(2) // script and styles
  const answers = [
    ...(await Promise.all(['/ui', '/ui/', ...assets, '/ui/session', '/ui/assets/no-such-file.js'].map((p) => fetch(`${gw.url}${p}`)))),
    await signIn('a-wrong-token'),
    await fetch(`${gw.url}/ui/session`, { method: 'DELETE' }),
  ]
  expect(answers.map((r) => r.status)).toEqual([200, 200, ...assets.map(() => 200), 200, 404, 401, 204])
  // A missing file's name is echoed to 64 characters at most.
  const long = await fetch(`${gw.url}/ui/assets/${'z'.repeat(200)}.js`)
  expect(long.status).toBe(404)
  expect(((await long.json()) as any).message).toBe(`No dashboard file "${'z'.repeat(64)}…"`)
  for (const res of answers) {
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  }
})

test('the framing headers go on /ui, /ui/… and /ui?…, not on a path that only starts with "/ui" nor on the API', async () => {
  const [query, beside, health] = await Promise.all([fetch(`${gw.url}/ui?tab=logs`), fetch(`${gw.url}/uix`), fetch(`${gw.url}/health`)])
  expect(query.status).toBe(200)
  expect(query.headers.get('x-frame-options')).toBe('DENY')
  expect(beside.status).toBe(404)
  expect(beside.headers.get('x-frame-options')).toBeNull()
  expect(health.headers.get('x-frame-options')).toBeNull()
})

test('signing in sets an HttpOnly SameSite session cookie that opens the admin API; signing out ends it', async () => {
  const res = await signIn()
  expect(res.status).toBe(201)
  const setCookie = res.headers.get('set-cookie') as string
  expect(setCookie).toMatch(/^gw_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/) // no Secure over plain HTTP
  const { csrf } = (await res.json()) as { csrf: string }
  const cookie = cookieFrom(res)
  expect((await fetch(`${gw.url}/admin/orgs`, { headers: { cookie } })).status).toBe(200)
  expect(await (await fetch(`${gw.url}/ui/session`, { headers: { cookie } })).json()).toMatchObject({ signedIn: true, csrf })

  // Changes need the CSRF token, and a same-origin Origin when one is sent.
  const create = (headers: Record<string, string>) =>
    fetch(`${gw.url}/admin/orgs/default/service-keys`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: '{}' })
  const noCsrf = await create({})
  expect(noCsrf.status).toBe(403)
  expect(((await noCsrf.json()) as { message: string }).message).toContain('x-gw-csrf')
  expect((await create({ 'x-gw-csrf': 'wrong' })).status).toBe(403)
  expect((await create({ 'x-gw-csrf': csrf, origin: 'https://evil.example' })).status).toBe(403)
  expect((await create({ 'x-gw-csrf': csrf, origin: gw.url })).status).toBe(201)

  const out = await fetch(`${gw.url}/ui/session`, { method: 'DELETE', headers: { cookie, 'x-gw-csrf': csrf } })
  expect(out.status).toBe(204)
  expect(out.headers.get('set-cookie')).toContain('Max-Age=0')
  // The old cookie no longer works, even if a browser kept it.
  expect((await fetch(`${gw.url}/admin/orgs`, { headers: { cookie } })).status).toBe(401)
  expect(await (await fetch(`${gw.url}/ui/session`, { headers: { cookie } })).json()).toMatchObject({ signedIn: false })
})

test('the cookie is Secure behind HTTPS, and a forged cookie opens nothing', async () => {
  const res = await signIn(ADMIN_TOKEN, { 'x-forwarded-proto': 'https' })
  expect(res.headers.get('set-cookie')).toContain('; Secure')
  const [name, value] = cookieFrom(res).split('=') as [string, string]
  const [exp, id, mac] = value.split('.')
  const forged = `${name}=${Number(exp) + 1000}.${id}.${mac}`
  expect((await fetch(`${gw.url}/admin/orgs`, { headers: { cookie: forged } })).status).toBe(401)
})

test('a wrong token is refused with a message; after five wrong ones the right token still signs in at once', async () => {
  const wrong = await signIn('not-the-admin-token')
  expect(wrong.status).toBe(401)
  expect(await wrong.json()).toMatchObject({ error: true, code: 'unauthorized', message: expect.stringContaining('Wrong admin token') })
  expect(wrong.headers.get('set-cookie')).toBeNull()
  for (let i = 0; i < 4; i++) expect((await signIn('still-wrong')).status).toBe(401)
  const started = performance.now()
  const right = await signIn()
  expect(right.status).toBe(201)
  expect(performance.now() - started).toBeLessThan(150)
})

test('sessions expire, a rotated admin token ends them, and signing out ends one in the store', async () => {
  const store = createSqliteStore(':memory:', new SecretBox('s'))
  try {
    let now = 1_000_000
    const keeper = new SessionKeeper('some-admin-token-123456', store.sessions, 60_000, () => now)
    const { cookie, session } = await keeper.create()
    expect((await keeper.verify(cookie))?.csrf).toBe(session.csrf)
    now += 59_999
    expect(await keeper.verify(cookie)).toBeDefined()
    // Another admin token (rotated) ends every session.
    expect(await new SessionKeeper('another-admin-token-1234', store.sessions, 60_000, () => now).verify(cookie)).toBeUndefined()
    // Another keeper on the same store (another instance, or after a restart) knows the session, and its sign-out.
    const again = new SessionKeeper('some-admin-token-123456', store.sessions, 60_000, () => now)
    expect(await again.verify(cookie)).toBeDefined()
    await again.revoke(session)
    expect(await keeper.verify(cookie)).toBeUndefined()
    const second = await keeper.create()
    now += 60_001
    expect(await keeper.verify(second.cookie)).toBeUndefined()
  } finally {
    await store.close()
  }
})

/** Every gateway on a shared database has the same default-org key (only the first start generates one). */
const SERVICE_KEY = `gw_sk_${'s'.repeat(44)}`

/** One database for several gateways in turn or at once: a SQLite file, or a PostgreSQL schema on that leg. */
async function sharedDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (TEST_STORE === 'postgres') {
    const schema = await freshSchema()
    return { env: { GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET, GW_SERVICE_KEY: SERVICE_KEY }, drop: () => schema.drop() }
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-sessions-'))
  return { env: { GW_DB: join(dir, 'gw.db'), GW_SERVICE_KEY: SERVICE_KEY }, drop: async () => rmSync(dir, { recursive: true, force: true }) }
}

const createKey = (g: TestGateway, cookie: string, csrf: string) =>
  fetch(`${g.url}/admin/orgs/default/service-keys`, { method: 'POST', headers: { cookie, 'x-gw-csrf': csrf, 'content-type': 'application/json' }, body: '{}' })

async function signInTo(g: TestGateway) {
  const res = await fetch(`${g.url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN_TOKEN }) })
  expect(res.status).toBe(201)
  return { cookie: cookieFrom(res), csrf: ((await res.json()) as { csrf: string }).csrf }
}

test('signing out survives a restart: the old cookie is refused and cannot create a key; other sessions go on', async () => {
  const db = await sharedDatabase()
  let g = await startTestGateway({}, db.env)
  try {
    const out = await signInTo(g)
    const kept = await signInTo(g)
    expect((await fetch(`${g.url}/ui/session`, { method: 'DELETE', headers: { cookie: out.cookie, 'x-gw-csrf': out.csrf } })).status).toBe(204)
    await g.stop()
    g = await startTestGateway({}, db.env)
    expect((await fetch(`${g.url}/admin/orgs`, { headers: { cookie: out.cookie } })).status).toBe(401)
    expect((await createKey(g, out.cookie, out.csrf)).status).toBe(401)
    expect(await (await fetch(`${g.url}/ui/session`, { headers: { cookie: out.cookie } })).json()).toMatchObject({ signedIn: false })
    // A session not signed out lives on across the restart.
    expect((await createKey(g, kept.cookie, kept.csrf)).status).toBe(201)
  } finally {
    await g.stop()
    await db.drop()
  }
}, 30_000)

const pgUp = await serversFor('dashboard sessions shared by two instances', { postgres: true })

test.skipIf(!pgUp)('PostgreSQL: a session made on instance A works on instance B; signing out on B ends it on A', async () => {
  const schema = await freshSchema()
  const env = { GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET, GW_SERVICE_KEY: SERVICE_KEY }
  const a = await startTestGateway({}, env)
  const b = await startTestGateway({}, env)
  try {
    const s = await signInTo(a)
    expect((await fetch(`${b.url}/admin/orgs`, { headers: { cookie: s.cookie } })).status).toBe(200)
    expect((await createKey(b, s.cookie, s.csrf)).status).toBe(201)
    expect((await fetch(`${b.url}/ui/session`, { method: 'DELETE', headers: { cookie: s.cookie, 'x-gw-csrf': s.csrf } })).status).toBe(204)
    expect((await fetch(`${a.url}/admin/orgs`, { headers: { cookie: s.cookie } })).status).toBe(401)
    expect((await createKey(a, s.cookie, s.csrf)).status).toBe(401)
  } finally {
    await a.stop()
    await b.stop()
    await schema.drop()
  }
}, 30_000)

test('without GW_ADMIN_TOKEN there is no dashboard', async () => {
  const other = await startTestGateway({}, { GW_ADMIN_TOKEN: '' })
  try {
    expect((await fetch(`${other.url}/ui`)).status).toBe(404)
    expect((await fetch(`${other.url}/ui/session`, { method: 'POST', body: '{"token":"x"}' })).status).toBe(404)
  } finally {
    await other.stop()
  }
})
