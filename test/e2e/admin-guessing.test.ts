// Guessing the admin token: wrong tokens are slowed per client address (behind a trusted proxy, per X-Forwarded-For), the right one never is; repeated failures are logged once a minute.

import { afterAll, afterEach, beforeAll, expect, spyOn, test } from 'bun:test'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let proxied: TestGateway // behind a trusted proxy: GW_TRUSTED_PROXIES names the test's own address
let direct: TestGateway // no trusted proxy (the default)
let warnings: string[] = []
const spy = spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
  warnings.push(args.map(String).join(' '))
})

beforeAll(async () => {
  proxied = await startTestGateway({}, { GW_TRUSTED_PROXIES: '10.9.0.0/16, 127.0.0.1' })
  direct = await startTestGateway()
})
afterAll(async () => {
  spy.mockRestore()
  await proxied.stop()
  await direct.stop()
})
afterEach(() => {
  warnings = []
})

const asAdmin = (gw: TestGateway, token: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/admin/orgs`, { headers: { authorization: `Bearer ${token}`, ...headers } })
const signIn = (gw: TestGateway, token: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ token }) })

/** How long an answer took, and its status. */
async function timed(answer: Promise<Response>): Promise<{ status: number; ms: number }> {
  const started = performance.now()
  const res = await answer
  await res.arrayBuffer()
  return { status: res.status, ms: performance.now() - started }
}

test('many wrong admin tokens in 3 s: the attempt rate is bounded, on /admin and on the dashboard sign-in', async () => {
  for (const [where, guess] of [
    ['/admin', (i: number) => asAdmin(proxied, `wrong-guess-${i}`, { 'x-forwarded-for': '198.51.100.1' })],
    ['/ui/session', (i: number) => signIn(proxied, `wrong-guess-${i}`, { 'x-forwarded-for': '198.51.100.2' })],
  ] as const) {
    const until = performance.now() + 3000
    let answered = 0
    let n = 0
    // 32 guessers at once, each sending its next guess as soon as the last is answered.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (performance.now() < until) {
          const res = await guess(n++)
          expect(res.status).toBe(401)
          if (performance.now() < until) answered++
        }
      }),
    )
    console.log(`${where}: ${answered} wrong tokens answered within 3 s from one client sending 32 at once (${n} sent)`)
    expect(answered).toBeGreaterThanOrEqual(5)
    expect(answered).toBeLessThanOrEqual(40)
  }
}, 30_000)

test('the right token is accepted at once after 5 and after 50 wrong ones, Bearer and sign-in alike', async () => {
  const client = { 'x-forwarded-for': '198.51.100.3' }
  for (let i = 0; i < 5; i++) expect((await asAdmin(proxied, `wrong-${i}`, client)).status).toBe(401)
  const afterFive = await timed(asAdmin(proxied, ADMIN_TOKEN, client))
  expect(afterFive.status).toBe(200)
  expect(afterFive.ms).toBeLessThan(150)
  expect((await timed(signIn(proxied, ADMIN_TOKEN, client))).status).toBe(201)
  // 45 more, all at once (answered over a few seconds), then the right token.
  const statuses = await Promise.all(Array.from({ length: 45 }, async (_, i) => (await signIn(proxied, `wrong-${i}`, client)).status))
  expect(new Set(statuses)).toEqual(new Set([401]))
  const afterFifty = await timed(asAdmin(proxied, ADMIN_TOKEN, client))
  expect(afterFifty.status).toBe(200)
  expect(afterFifty.ms).toBeLessThan(150)
  const signedIn = await timed(signIn(proxied, ADMIN_TOKEN, client))
  expect(signedIn.status).toBe(201)
  expect(signedIn.ms).toBeLessThan(150)
  // A further wrong one is still slowed: the right token did not wipe the count.
  expect((await timed(asAdmin(proxied, 'wrong-again', client))).ms).toBeGreaterThanOrEqual(900)
}, 30_000)

test('two clients behind a trusted proxy are slowed separately; an untrusted peer’s X-Forwarded-For is ignored', async () => {
  // Behind the trusted proxy: A's failures slow A only. Hops A wrote itself (left of the proxy's own) change nothing.
  for (let i = 0; i < 8; i++)
    expect((await asAdmin(proxied, `wrong-${i}`, { 'x-forwarded-for': `192.0.2.${i}, 203.0.113.7` })).status).toBe(401)
  const a = await timed(asAdmin(proxied, 'wrong-a', { 'x-forwarded-for': '192.0.2.99, 203.0.113.7' }))
  const b = await timed(asAdmin(proxied, 'wrong-b', { 'x-forwarded-for': '203.0.113.8' }))
  expect(a).toMatchObject({ status: 401 })
  expect(a.ms).toBeGreaterThanOrEqual(750) // the 9th failure: 800 ms
  expect(b).toMatchObject({ status: 401 })
  expect(b.ms).toBeLessThan(150)
  // A chain of trusted proxies (10.9.0.0/16) in front: the client is the hop before them.
  const c = await timed(asAdmin(proxied, 'wrong-c', { 'x-forwarded-for': '203.0.113.7, 10.9.1.2' }))
  expect(c.ms).toBeGreaterThanOrEqual(900)

  // Without GW_TRUSTED_PROXIES the peer is the client, whatever X-Forwarded-For says.
  for (let i = 0; i < 8; i++) expect((await asAdmin(direct, `wrong-${i}`, { 'x-forwarded-for': `203.0.113.${i}` })).status).toBe(401)
  const spoofed = await timed(asAdmin(direct, 'wrong-spoofed', { 'x-forwarded-for': '203.0.113.200' }))
  expect(spoofed.ms).toBeGreaterThanOrEqual(750)
}, 30_000)

test('repeated failures are logged once a minute per client, with their count and never the token', async () => {
  const client = { 'x-forwarded-for': '198.51.100.4' }
  for (let i = 0; i < 8; i++) expect((await signIn(proxied, `secret-guess-${i}`, client)).status).toBe(401)
  const mine = warnings.filter((w) => w.includes('198.51.100.4'))
  expect(mine).toHaveLength(1)
  expect(mine[0]).toContain('5 wrong admin tokens from 198.51.100.4')
  expect(mine[0]).toContain('POST /ui/session')
  expect(warnings.join('\n')).not.toContain('secret-guess')
})
