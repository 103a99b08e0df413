// The dashboard in a real browser (Debian's Chromium): sign-in, logs, keys, policy, prompts, sign-out; nothing
// but gw is asked for, and the console stays clean. Screenshots of each page go to docs/screenshots when
// GW_UPDATE_SCREENSHOTS=1 (otherwise to a temporary folder).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { type Browser, browserAvailable, openBrowser } from '../helpers/browser'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'
import { fmtRemaining, fmtUsd } from '../../src/ui/money'

const enabled = browserAvailable()
const SHOTS = process.env.GW_UPDATE_SCREENSHOTS === '1' ? join(import.meta.dir, '../../docs/screenshots') : mkdtempSync(join(tmpdir(), 'gw-shots-'))
/** Browser console lines a step provokes on purpose (an error answer the page then explains). */
const EXPECTED_HTTP_ERROR = /^Failed to load resource: the server responded with a status of (400|401)/

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway
let b: Browser
let page: Page
let allowedErrors = 0

beforeAll(async () => {
  if (!enabled) return
  mkdirSync(SHOTS, { recursive: true })
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ openai, anthropic })
  b = await openBrowser()
  page = b.page
}, 60_000)

afterAll(async () => {
  if (!enabled) return
  await b.close()
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})

const t = enabled ? test : test.skip
const hello = [{ role: 'user', content: 'Say hi please' }]

const nav = (name: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name })

async function shot(name: string) {
  const path = join(SHOTS, `${name}.png`)
  await page.evaluate(() => scrollTo(0, 0)) // the sticky header lands mid-page in a full-page shot otherwise
  await page.screenshot({ path, fullPage: true })
  expect(statSync(path).size).toBeGreaterThan(10_000)
}

/** Lets the step's own expected error lines through; every other console error fails the last test. */
function expectErrors(n: number) {
  allowedErrors += n
}

t('a wrong token is refused with a message; the admin token signs in', async () => {
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Admin token').fill('not-the-admin-token')
  await shot('sign-in')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('Wrong admin token')
  expectErrors(1)
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
  const cookie = (await b.context.cookies()).find((c) => c.name === 'gw_session')
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' })
  // The session survives a reload.
  await page.reload()
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
  await page.getByText('No requests yet — here is a curl').waitFor()
}, 30_000)

t('requests made through gw appear in the logs, live, and an entry shows attempts, fallback and cost', async () => {
  const plain = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, metadata: { team: 'search' } })
  expect(plain.status).toBe(200)
  openai.enqueue({ kind: 'error', status: 500 })
  const fellBack = await gw.chat({
    model: 'openai/gpt-4o-mini',
    messages: hello,
    fallback_chain: [{ model: 'anthropic/claude-sonnet-4-5', triggers: ['provider_error'] }],
  })
  expect(fellBack.status).toBe(200)
  const plainId = plain.headers.get('x-gw-request-id') as string
  const fallbackId = fellBack.headers.get('x-gw-request-id') as string

  await nav('Logs').click()
  await page.getByRole('link', { name: fallbackId }).waitFor()
  await page.getByRole('link', { name: plainId }).waitFor()

  // Filters go to the server: metadata team=search leaves only the first request.
  await page.getByLabel('Metadata').fill('team=search')
  await page.getByRole('button', { name: 'Apply' }).click()
  await page.getByRole('link', { name: fallbackId }).waitFor({ state: 'detached' })
  await expect(page.getByRole('link', { name: plainId }).count()).resolves.toBe(1)
  await page.getByRole('button', { name: 'Clear' }).click()

  // Live tail: a new request shows up without reloading.
  await page.getByLabel('Live tail').check()
  const later = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  await page.getByRole('link', { name: later.headers.get('x-gw-request-id') as string }).waitFor({ timeout: 10_000 })
  await page.getByLabel('Live tail').uncheck()
  await shot('logs')

  await page.getByRole('link', { name: fallbackId }).click()
  const detail = page.getByRole('complementary', { name: 'Log entry' })
  await detail.getByRole('heading', { name: 'Attempts' }).waitFor()
  const attempts = await detail.locator('table').first().locator('tbody tr').allTextContents()
  expect(attempts).toHaveLength(2)
  expect(attempts[0]).toContain('openai/gpt-4o-mini')
  expect(attempts[0]).toContain('provider_error')
  expect(attempts[1]).toContain('anthropic/claude-sonnet-4-5')
  expect(attempts[1]).toContain('ok')
  const entry = await gw.log(fallbackId)
  const text = (await detail.textContent()) ?? ''
  expect(text).toContain('used: provider_error → anthropic/claude-sonnet-4-5')
  expect(entry.costUsd).toBeGreaterThan(0)
  expect(text).toMatch(/Cost\$0\.\d+/)
  expect(text).toContain('"Say hi please"') // the request body, pretty-printed
  await shot('log-detail')
  await page.keyboard.press('Escape')
  await detail.waitFor({ state: 'detached' })
}, 60_000)

t('the logs table shows each entry’s endpoint, error code and fallback, and tiny costs in fixed decimals', async () => {
  openai.enqueue({ kind: 'reply', usage: { prompt: 1, completion: 0 } })
  const tiny = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  openai.enqueue({ kind: 'error', status: 500 })
  const failed = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  expect(failed.status).toBe(502)
  const tinyEntry = (await gw.log(tiny.headers.get('x-gw-request-id') as string)) as { endpoint: string; costUsd: number }
  expect(tinyEntry.costUsd).toBeLessThan(1e-6)

  await nav('Logs').click()
  await page.reload()
  const row = (id: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name: id }) })
  await row(tiny.headers.get('x-gw-request-id') as string).waitFor()
  const header = ((await page.locator('table.logs thead').textContent()) ?? '').replace(/\s+/g, ' ')
  for (const column of ['Endpoint', 'Error', 'Fallback']) expect(header).toContain(column)
  const tinyText = (await row(tiny.headers.get('x-gw-request-id') as string).textContent()) ?? ''
  expect(tinyText).toContain(tinyEntry.endpoint)
  expect(tinyText).toContain(fmtUsd(tinyEntry.costUsd))
  expect(fmtUsd(tinyEntry.costUsd)).toMatch(/^\$0\.0000\d+$/)
  // No exponent notation anywhere in the row (its request id, a UUID, may hold "2e-7" by chance: left out).
  expect(tinyText.replace(tiny.headers.get('x-gw-request-id') as string, '')).not.toMatch(/\de-\d/)
  const failedText = (await row(failed.headers.get('x-gw-request-id') as string).textContent()) ?? ''
  expect(failedText).toContain('502')
  expect(failedText).toContain('provider_error')
  const fellBack = (await gw.fetch('/v1/logs?limit=50').then((r) => r.json())).data.find((e: { fallback: { used: boolean } }) => e.fallback.used)
  expect(await row(fellBack.requestId).textContent()).toContain('provider_error → anthropic/claude-sonnet-4-5')
}, 30_000)

t('a key created in the dashboard is shown once, works on /v1/chat/completions, and is 401 once revoked', async () => {
  await b.context.grantPermissions(['clipboard-read', 'clipboard-write'])
  await nav('Keys').click()
  await page.getByLabel('Name (optional)').first().fill('from-the-browser')
  await page.getByRole('button', { name: 'Create key' }).click()
  const shown = page.locator('.once code')
  await shown.waitFor()
  const key = (await shown.textContent()) as string
  expect(key).toMatch(/^gw_sk_/)
  await page.locator('.once').getByRole('button', { name: 'Copy' }).click()
  await page.locator('.once').getByRole('button', { name: 'Copied' }).waitFor()
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key)
  await shot('keys')

  const call = (k: string) =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `GwKey ${k}` }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hello }) })
  expect((await call(key)).status).toBe(200)

  // Shown once: after a reload the key is nowhere on the page.
  await page.reload()
  const row = page.getByRole('row').filter({ hasText: 'from-the-browser' })
  await row.waitFor()
  expect(await page.content()).not.toContain(key)
  await row.getByRole('button', { name: 'Revoke' }).click() // the confirm dialog is accepted
  await row.getByText('revoked').waitFor()
  expect((await call(key)).status).toBe(401)

  // A provider key is set from the page and shown masked only.
  const form = page.getByRole('form', { name: 'Set a provider key' })
  await form.getByLabel('Provider').selectOption('mistral')
  await form.getByLabel('Key name').fill('backup')
  await form.getByLabel('API key').fill('mistral-secret-key-00004321')
  await form.getByLabel('Weight').fill('2')
  await form.getByRole('button', { name: 'Save provider key' }).click()
  const keyRow = page.getByRole('table', { name: 'Provider keys' }).getByRole('row').filter({ hasText: 'mistral' })
  await keyRow.waitFor()
  expect(await keyRow.textContent()).toContain('mis…4321')
  expect(await page.content()).not.toContain('mistral-secret-key')
}, 30_000)

t('a policy with an invalid value shows the server’s message; a valid one is saved', async () => {
  await nav('Policy & access').click()
  const maxTokens = page.getByLabel('Max output tokens')
  await maxTokens.fill('-5')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid field "maxTokens": Expected integer to be greater or equal to 1')
  expectErrors(1)
  await maxTokens.fill('4000')
  await page.getByLabel('Allowed models').fill('openai/*, anthropic/*')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await page.getByRole('status').filter({ hasText: 'Saved.' }).first().waitFor()
  const org = (await (await gw.admin('GET', '/orgs/default')).json()) as { policy: object }
  expect(org.policy).toEqual({ maxTokens: 4000, allowedModels: ['openai/*', 'anthropic/*'] })

  // A budget with a wrong period: the server's message; then a valid one, which the overview shows.
  await page.getByLabel('Budgets (JSON)').fill('[{"scope": "org", "usd": 5, "period": "week"}]')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('budgets')
  expectErrors(1)
  await page.getByLabel('Budgets (JSON)').fill('[{"scope": "org", "usd": 5, "period": "month"}]')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await page.getByRole('status').filter({ hasText: 'Saved.' }).first().waitFor()

  // A route set in the page is listed and answers requests.
  await page.getByLabel('Route name').fill('fast')
  await page.getByLabel('Targets').fill('openai/gpt-4o-mini=3, anthropic/claude-sonnet-4-5=1')
  await page.getByRole('button', { name: 'Save route' }).click()
  await page.getByRole('table', { name: 'Routes' }).getByText('openai/gpt-4o-mini (3), anthropic/claude-sonnet-4-5 (1)').waitFor()
  const routed = await gw.chat({ model: 'fast', messages: hello })
  expect(routed.status).toBe(200)
  expect((await gw.log(routed.headers.get('x-gw-request-id') as string)).route).toBe('fast')
  await shot('policy')
}, 30_000)

t('the response cache and guardrails are set on the policy page with validation messages; the log detail shows a hit and what acted', async () => {
  await nav('Policy & access').click()
  await page.getByLabel('Response cache').selectOption('exact')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('Response cache: set the TTL in seconds, from 1 to 2,592,000.')
  await page.getByLabel('Cache TTL (seconds)').fill('0')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('Cache TTL must be whole seconds from 1 to 2,592,000')
  await page.getByLabel('Cache TTL (seconds)').fill('600')
  await page.getByLabel('Guardrails (JSON)').fill('[{"name": "codes", "kind": "regex", "on": "input", "action": "block", "patterns": ["(a)\\\\1"]}]')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid field "guardrails/0/patterns/0"')
  expectErrors(1)
  await page.getByLabel('Guardrails (JSON)').fill('[{"name": "pii", "kind": "pii", "on": "input", "action": "mask", "entities": ["email"]}]')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await page.getByRole('status').filter({ hasText: 'Saved.' }).first().waitFor()
  const org = (await (await gw.admin('GET', '/orgs/default')).json()) as { policy: Record<string, unknown> }
  expect(org.policy.cache).toEqual({ mode: 'exact', ttlSeconds: 600 })
  expect(org.policy.guardrails).toEqual([{ name: 'pii', kind: 'pii', on: 'input', action: 'mask', entities: ['email'] }])

  const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'A question asked twice' }] }
  expect((await gw.chat(body)).headers.get('x-gw-cache')).toBe('miss')
  const hit = await gw.chat(body)
  expect(hit.headers.get('x-gw-cache')).toBe('hit')
  const masked = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Reply to ada@example.com' }] })
  expect(masked.status).toBe(200)

  await nav('Logs').click()
  await page.getByRole('link', { name: hit.headers.get('x-gw-request-id') as string }).click()
  const detail = page.getByRole('complementary', { name: 'Log entry' })
  await detail.getByText('hit: answered from the cache', { exact: false }).waitFor()
  await page.keyboard.press('Escape')
  await detail.waitFor({ state: 'detached' })
  await page.getByRole('link', { name: masked.headers.get('x-gw-request-id') as string }).click()
  await detail.getByText('pii: mask (email)').waitFor()
  expect(await detail.textContent()).not.toContain('ada@example.com')
  await page.keyboard.press('Escape')
  await detail.waitFor({ state: 'detached' })
  // The next steps' org has no cache or guardrails.
  const reset = await gw.admin('PUT', '/orgs/default/policy', { ...org.policy, cache: undefined, guardrails: undefined })
  expect(reset.status).toBe(200)
  // Leave on the page the next step expects to start from, once it has loaded.
  await nav('Policy & access').click()
  await page.getByRole('button', { name: 'Save policy' }).waitFor()
}, 60_000)

t('prompts: versions side by side with a diff, publish, and a playground that streams the answer', async () => {
  await gw.admin('POST', '/orgs/default/prompts', { slug: 'greeter', name: 'Greeter' })
  const variables = [{ name: 'who', type: 'string', required: true }]
  await gw.admin('POST', '/orgs/default/prompts/greeter/versions', { userTemplate: 'Say hello to {{who}}.', model: 'openai/gpt-4o-mini', variables, publish: true })
  await gw.admin('POST', '/orgs/default/prompts/greeter/versions', { userTemplate: 'Say a warm hello to {{who}}.', systemTemplate: 'Be brief.', model: 'openai/gpt-4o-mini', variables })

  await nav('Prompts').click()
  await page.getByRole('link', { name: 'greeter' }).click()
  const diff = page.getByRole('table', { name: 'Version diff' })
  await diff.waitFor()
  const changed = await diff.locator('tr.changed, tr.added, tr.removed').allTextContents()
  expect(changed.join('\n')).toContain('Say hello to {{who}}.')
  expect(changed.join('\n')).toContain('Say a warm hello to {{who}}.')
  expect(changed.join('\n')).toContain('Be brief.')
  await page.getByRole('button', { name: 'Publish v2' }).click()
  await diff.getByText('published').last().waitFor()
  await expect(gw.admin('GET', '/orgs/default/prompts/greeter').then((r) => r.json())).resolves.toMatchObject({ publishedVersion: 2 })

  openai.enqueue({ kind: 'reply', chunkDelayMs: 150 })
  await page.getByLabel('who (string, required)').fill('Ada')
  await page.getByRole('button', { name: 'Run' }).click()
  // Watch the answer grow: several partial texts before the whole one.
  const seen = new Set<string>()
  const answer = page.getByRole('status', { name: 'Answer' })
  await page.getByRole('button', { name: 'Running…' }).waitFor()
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (await answer.count()) seen.add(((await answer.textContent()) ?? '').replace('▍', ''))
    if (await page.getByRole('button', { name: 'Run', exact: true }).count()) break
    await Bun.sleep(25)
  }
  const final = 'Hello from fake-openai (gpt-4o-mini).'
  await expect(answer.textContent()).resolves.toBe(final)
  const partial = [...seen].filter((s) => s && s !== final)
  expect(partial.length).toBeGreaterThanOrEqual(2)
  for (const p of partial) expect(final.startsWith(p)).toBe(true)
  expect((openai.requests.at(-1)?.body as { messages: { content: string }[] }).messages.at(-1)?.content).toBe('Say a warm hello to Ada.')
  await page.getByText('log entry').waitFor()
  await shot('prompts')

  // A prompt managed by a prompt file says so, and saving a version of it warns that the file wins at the next start.
  const greeter = (await (await gw.admin('GET', '/orgs/default/prompts/greeter')).json()) as { id: string }
  await gw.gw.deps.store.prompts.setSourceFile(greeter.id, '/srv/gw/prompts/greeter.md')
  await page.reload()
  await expect(page.getByRole('note').textContent()).resolves.toContain('Managed by the file /srv/gw/prompts/greeter.md')
  await page.getByRole('form', { name: 'New version' }).getByLabel('User template').fill('Say bye to {{who}}.')
  await page.getByRole('button', { name: 'Save version' }).click()
  await expect(page.getByRole('status').filter({ hasText: 'Saved.' }).textContent()).resolves.toContain('at the next start')
  await gw.gw.deps.store.prompts.setSourceFile(greeter.id, undefined)
}, 30_000)

t('the overview charts what happened', async () => {
  await nav('Overview').click()
  await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor()
  await page.locator('.uplot').first().waitFor()
  expect(await page.locator('.uplot').count()).toBe(6)
  const requests = await page.locator('.tile').filter({ hasText: 'Requests' }).locator('strong').textContent()
  const total = ((await (await gw.admin('GET', '/orgs/default/logs?limit=500')).json()) as { data: unknown[] }).data.length
  expect(Number(requests)).toBe(total)
  const usage = page.locator('section', { has: page.getByRole('heading', { name: 'Usage', exact: true }) })
  await usage.getByRole('row').filter({ hasText: 'anthropic/claude-sonnet-4-5' }).waitFor()
  // The same table by provider, service key, end user and a metadata key's values.
  await usage.getByLabel('Group usage by').selectOption('provider')
  await usage.getByRole('row').filter({ hasText: /^anthropic/ }).waitFor()
  await usage.getByLabel('Group usage by').selectOption('key')
  const logged = (await gw.fetch('/v1/logs?limit=100').then((r) => r.json())).data as { authMode: string; subject: string }[]
  const keyId = logged.find((e) => e.authMode === 'GwKey')?.subject as string
  expect(keyId).toBeTruthy()
  await usage.getByRole('row').filter({ hasText: keyId }).waitFor()
  await usage.getByLabel('Group usage by').selectOption('endUser')
  await usage.getByRole('row').filter({ hasText: '(none)' }).waitFor()
  await usage.getByLabel('Group usage by').selectOption('metadata')
  await usage.getByLabel('Metadata key').fill('team')
  await usage.getByRole('button', { name: 'Show' }).click()
  const team = usage.getByRole('row').filter({ hasText: /^search/ })
  await team.waitFor()
  expect((await team.textContent())?.startsWith('search1')).toBe(true)
  await usage.getByLabel('Group usage by').selectOption('model')

  // A budget's remainder at the precision of what was spent from it.
  const budget = page.getByRole('table', { name: 'Budgets' }).getByRole('row').filter({ hasText: 'month' })
  await budget.waitFor()
  const [status] = ((await (await gw.admin('GET', '/orgs/default/budgets')).json()) as { data: { spentUsd: number; reservedUsd: number; remainingUsd: number }[] }).data
  expect(status?.spentUsd).toBeGreaterThan(0)
  expect(status?.spentUsd).toBeLessThan(0.01)
  const remaining = fmtRemaining(status?.remainingUsd as number, status?.spentUsd as number, status?.reservedUsd as number)
  expect(remaining).not.toBe('$5.00')
  expect(await budget.textContent()).toMatch(/^org\s*month\$5\.00\$0\.\d+/)
  expect(await budget.textContent()).toContain(remaining)
  await shot('overview')
  // Dark mode follows the system setting.
  await page.emulateMedia({ colorScheme: 'dark' })
  await page.reload()
  await page.locator('.uplot').first().waitFor()
  expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(11, 17, 32)')
  await shot('overview-dark')
  await page.emulateMedia({ colorScheme: 'light' })
}, 30_000)

t('the org switcher shows another org’s data', async () => {
  await gw.admin('POST', '/orgs', { id: 'acme', name: 'Acme' })
  await page.reload()
  await page.getByLabel('Org').selectOption('acme')
  await page.getByText('No requests yet — here is a curl').waitFor()
  await nav('Keys').click()
  await page.getByText('No service keys yet').waitFor()
  await page.getByLabel('Org').selectOption('default')
  await page.getByRole('row').filter({ hasText: 'from-the-browser' }).waitFor()
  // Keyboard: "g" then a page's letter moves there.
  await page.locator('body').click({ position: { x: 5, y: 300 } })
  await page.keyboard.press('g')
  await page.keyboard.press('l')
  await page.getByRole('heading', { name: 'Logs' }).waitFor()
  await page.keyboard.press('g')
  await page.keyboard.press('r')
  await page.getByRole('heading', { name: 'Prompts' }).waitFor()
}, 30_000)

t('signing out ends the session, in the browser and on the server', async () => {
  const cookie = (await b.context.cookies()).find((c) => c.name === 'gw_session')
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByLabel('Admin token').waitFor()
  expect((await b.context.cookies()).some((c) => c.name === 'gw_session')).toBe(false)
  const replay = await fetch(`${gw.url}/admin/orgs`, { headers: { cookie: `gw_session=${cookie?.value}` } })
  expect(replay.status).toBe(401)
  await page.reload()
  await page.getByLabel('Admin token').waitFor()
}, 30_000)

t('the page asked nothing of any host but gw, and logged no unexpected console error', () => {
  const hosts = new Set(b.requests.filter((u) => !u.startsWith('data:')).map((u) => new URL(u).host))
  expect([...hosts]).toEqual([new URL(gw.url).host])
  const unexpected = b.errors.filter((e) => !EXPECTED_HTTP_ERROR.test(e))
  expect(unexpected).toEqual([])
  expect(b.errors.length).toBe(allowedErrors)
})
