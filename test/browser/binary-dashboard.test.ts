// The compiled binary (dist/gw, from `bun run build`) serves the same dashboard from its embedded bundle, and the API docs page.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { browserAvailable, openBrowser } from '../helpers/browser'

const enabled = browserAvailable()
const root = join(import.meta.dir, '../..')
const TOKEN = 'binary-dashboard-admin-token-0123'
let dir: string
let openai: FakeUpstream

beforeAll(async () => {
  if (!enabled) return
  dir = mkdtempSync(join(tmpdir(), 'gw-bin-ui-'))
  const build = Bun.spawnSync([process.execPath, 'scripts/build.ts'], { cwd: root, stderr: 'pipe', stdout: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
  openai = await startFake('openai')
}, 120_000)
afterAll(async () => {
  if (!enabled) return
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

;(enabled ? test : test.skip)('dist/gw, run from an empty folder, serves /ui: sign-in, overview, logs', async () => {
  const proc = Bun.spawn([join(root, 'dist/gw'), 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', GW_ADMIN_TOKEN: TOKEN, GW_OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: openai.apiKey },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const b = await openBrowser()
  try {
    const reader = proc.stdout.getReader()
    let out = ''
    while (!/gw_sk_\w+/.test(out)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`gw exited: ${out}`)
      out += new TextDecoder().decode(value)
    }
    const url = (/listening on (\S+)/.exec(out) as RegExpExecArray)[1] as string
    const key = (/gw_sk_\w+/.exec(out) as RegExpExecArray)[0]
    const chat = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}` },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(chat.status).toBe(200)

    const { page } = b
    // The embedded page and its assets come with the headers that forbid framing.
    const answers: Promise<Record<string, string>>[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/ui')) answers.push(r.allHeaders())
    })
    await page.goto(`${url}/ui`)
    await page.getByLabel('Admin token').fill(TOKEN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.locator('.uplot').first().waitFor()
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Logs' }).click()
    await page.getByRole('link', { name: chat.headers.get('x-gw-request-id') as string }).waitFor()
    expect(b.errors).toEqual([])
    const headers = await Promise.all(answers)
    expect(headers.length).toBeGreaterThanOrEqual(3) // page, script, styles, session API
    for (const h of headers) expect(h).toMatchObject({ 'x-frame-options': 'DENY', 'content-security-policy': "frame-ancestors 'none'" })
    expect([...new Set(b.requests.map((u) => new URL(u).host))]).toEqual([new URL(url).host])
    // The API docs page is embedded too, and renders the document (PRODUCT §16).
    await page.goto(`${url}/docs`)
    await page.locator('details#createOrg').waitFor()
    expect(b.errors).toEqual([])
    expect([...new Set(b.requests.map((u) => new URL(u).host))]).toEqual([new URL(url).host])
  } finally {
    await b.close()
    proc.kill('SIGTERM')
    await proc.exited
  }
}, 60_000)
