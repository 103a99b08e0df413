// Browsers (PRODUCT §4): GW_CORS_ORIGINS answers preflights and exposes x-gw-* headers; checked with
// plain requests and with headless Chromium calling gw from a page of another origin.
// Needs /usr/bin/chromium for the browser test (.ci/run installs it); skipped without it unless CI=true.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const CHROMIUM = '/usr/bin/chromium'
let openai: FakeUpstream
let gw: TestGateway
let plain: TestGateway
let page: ReturnType<typeof Bun.serve>
let pageOrigin: string

beforeAll(async () => {
  openai = await startFake('openai')
  // The page that calls gw: its script is given gw's URL and key in the query string.
  page = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () =>
      new Response(
        `<html><body><pre id="out">pending</pre><script>
const q = new URLSearchParams(location.search)
fetch(q.get('gw') + '/v1/chat/completions', {
  method: 'POST',
  headers: { authorization: 'GwKey ' + q.get('key'), 'content-type': 'application/json', 'x-gw-end-user-id': 'browser-user' },
  body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
})
  .then(async (r) => { document.getElementById('out').textContent = JSON.stringify({ status: r.status, model: r.headers.get('x-gw-model'), requestId: r.headers.get('x-gw-request-id'), body: await r.json() }) })
  .catch((e) => { document.getElementById('out').textContent = JSON.stringify({ failed: String(e) }) })
</script></body></html>`,
        { headers: { 'content-type': 'text/html' } },
      ),
  })
  pageOrigin = `http://127.0.0.1:${page.port}`
  gw = await startTestGateway({ openai }, { GW_CORS_ORIGINS: `https://app.example, ${pageOrigin}` })
  plain = await startTestGateway({ openai })
})
afterAll(async () => {
  page.stop(true)
  await gw.stop()
  await plain.stop()
  await openai.stop()
})

const preflight = (target: TestGateway, origin: string) =>
  fetch(`${target.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-gw-end-user-id' },
  })

describe('GW_CORS_ORIGINS', () => {
  test('a preflight from an allowed origin is answered with what the page may send', async () => {
    const res = await preflight(gw, 'https://app.example')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(res.headers.get('access-control-allow-methods')).toContain('POST')
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-gw-end-user-id')
    expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  })
  test('answers and errors carry the origin and expose the x-gw-* headers', async () => {
    const ok = await gw.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { origin: 'https://app.example' })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-gw-request-id')
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-gw-model')
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-gw-cost-usd')
    // The OpenAI and Anthropic SDKs read it to leave a request the provider refused alone (PRODUCT §4a).
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-should-retry')
    const denied = await fetch(`${gw.url}/v1/models`, { headers: { origin: 'https://app.example' } })
    expect(denied.status).toBe(401)
    expect(denied.headers.get('access-control-allow-origin')).toBe('https://app.example')
  })
  test('another origin gets no CORS headers; without GW_CORS_ORIGINS nobody does', async () => {
    const other = await preflight(gw, 'https://evil.example')
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const off = await preflight(plain, 'https://app.example')
    expect(off.headers.get('access-control-allow-origin')).toBeNull()
    const answer = await plain.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { origin: 'https://app.example' })
    expect(answer.headers.get('access-control-allow-origin')).toBeNull()
  })
})

/** Opens the page in headless Chromium and returns what its script wrote. */
async function inBrowser(target: TestGateway): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-chromium-'))
  try {
    const url = `${pageOrigin}/?gw=${encodeURIComponent(target.url)}&key=${encodeURIComponent(target.key)}`
    const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
    const proc = Bun.spawn([CHROMIUM, ...flags, `--user-data-dir=${dir}`, '--virtual-time-budget=10000', '--dump-dom', url], { stdout: 'pipe', stderr: 'ignore' })
    const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
    const dom = await new Response(proc.stdout).text()
    clearTimeout(timer)
    const out = /<pre id="out">([^<]*)<\/pre>/.exec(dom)?.[1]
    if (!out) throw new Error(`no result in the page: ${dom.slice(0, 500)}`)
    return JSON.parse(out.replaceAll('&quot;', '"').replaceAll('&amp;', '&')) as Record<string, unknown>
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const haveChromium = existsSync(CHROMIUM) || process.env.CI === 'true'
test.skipIf(!haveChromium)('Chromium: a page of an allowed origin calls gw and reads x-gw-model; without CORS it cannot', async () => {
  const allowed = await inBrowser(gw)
  expect(allowed).toMatchObject({ status: 200, model: 'openai/gpt-4o', body: { object: 'chat.completion' } })
  expect(allowed.requestId).toBeTruthy()
  const log = await gw.log(allowed.requestId as string)
  expect(log.endUserId).toBe('browser-user')
  expect(await inBrowser(plain)).toEqual({ failed: 'TypeError: Failed to fetch' })
}, 60_000)
