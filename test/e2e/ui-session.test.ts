// Dashboard sign-in over HTTP: the session cookie, CSRF on changes, sign-out, expiry and slowed guessing.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SessionKeeper, SignInThrottle } from '../../src/ui/session'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

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
  for (const res of answers) {
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  }
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
  expect(await (await fetch(`${gw.url}/ui/session`, { headers: { cookie } })).json()).toEqual({ signedIn: false })
})

test('the cookie is Secure behind HTTPS, and a forged cookie opens nothing', async () => {
  const res = await signIn(ADMIN_TOKEN, { 'x-forwarded-proto': 'https' })
  expect(res.headers.get('set-cookie')).toContain('; Secure')
  const [name, value] = cookieFrom(res).split('=') as [string, string]
  const [exp, id, mac] = value.split('.')
  const forged = `${name}=${Number(exp) + 1000}.${id}.${mac}`
  expect((await fetch(`${gw.url}/admin/orgs`, { headers: { cookie: forged } })).status).toBe(401)
})

test('a wrong token is refused with a message, and repeated failures lock sign-in for a while', async () => {
  const wrong = await signIn('not-the-admin-token')
  expect(wrong.status).toBe(401)
  expect(await wrong.json()).toMatchObject({ error: true, code: 'unauthorized', message: expect.stringContaining('Wrong admin token') })
  expect(wrong.headers.get('set-cookie')).toBeNull()
  for (let i = 0; i < 4; i++) expect((await signIn('still-wrong')).status).toBe(401)
  const locked = await signIn() // even the right token waits now
  expect(locked.status).toBe(429)
  expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(((await locked.json()) as { message: string }).message).toContain('try again')
})

test('sessions expire; the lock doubles with each further failure and a success clears it', () => {
  let now = 1_000_000
  const keeper = new SessionKeeper('some-admin-token-123456', 60_000, () => now)
  const { cookie, session } = keeper.create()
  expect(keeper.verify(cookie)?.csrf).toBe(session.csrf)
  now += 59_999
  expect(keeper.verify(cookie)).toBeDefined()
  now += 1
  expect(keeper.verify(cookie)).toBeUndefined()
  // Another admin token (rotated) ends every session.
  expect(new SessionKeeper('another-admin-token-1234', 60_000, () => now - 10).verify(cookie)).toBeUndefined()

  const throttle = new SignInThrottle(() => now)
  for (let i = 0; i < 4; i++) throttle.fail('a')
  expect(throttle.waitMs('a')).toBe(0)
  throttle.fail('a')
  expect(throttle.waitMs('a')).toBe(1000)
  throttle.fail('a')
  expect(throttle.waitMs('a')).toBe(2000)
  expect(throttle.waitMs('b')).toBe(0)
  throttle.succeed('a')
  expect(throttle.waitMs('a')).toBe(0)
})

test('without GW_ADMIN_TOKEN there is no dashboard', async () => {
  const other = await startTestGateway({}, { GW_ADMIN_TOKEN: '' })
  try {
    expect((await fetch(`${other.url}/ui`)).status).toBe(404)
    expect((await fetch(`${other.url}/ui/session`, { method: 'POST', body: '{"token":"x"}' })).status).toBe(404)
  } finally {
    await other.stop()
  }
})
