// The Keys page's Providers section in a real browser (Debian's Chromium): an OpenAI-compatible provider and a
// Bedrock one set from the page are listed, their secrets never come back into the page (not after a reload
// either), the new provider's model answers through gw, and an invalid value shows the server's message.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { type Browser, browserAvailable, openBrowser } from '../helpers/browser'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

const enabled = browserAvailable()
const COMPAT_KEY = 'sk-compat-FROM-THE-PAGE-0123456789'
const HEADER_SECRET = 'tenant-secret-FROM-THE-PAGE-4242'
const AWS_SECRET = 'aws-secret-FROM-THE-PAGE-wJalrXUtnFEMI'
const AWS_SESSION = 'aws-session-FROM-THE-PAGE-FwoGZXIvYXdz'
const SECRETS = [COMPAT_KEY, HEADER_SECRET, AWS_SECRET, AWS_SESSION]

let compat: FakeUpstream
let gw: TestGateway
let b: Browser
let page: Page

beforeAll(async () => {
  if (!enabled) return
  // An OpenAI-compatible vendor that checks its key.
  compat = await startFake('openai', { apiKey: COMPAT_KEY })
  gw = await startTestGateway({})
  b = await openBrowser()
  page = b.page
}, 60_000)

afterAll(async () => {
  if (!enabled) return
  await b.close()
  await gw.stop()
  await compat.stop()
})

const t = enabled ? test : test.skip

async function expectNoSecret() {
  const html = await page.content()
  for (const s of SECRETS) expect(html).not.toContain(s)
}

t('providers set from the page are listed with their secrets masked, answer requests, and an invalid value shows the server’s message', async () => {
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Keys' }).click()
  const form = page.getByRole('form', { name: 'Set a provider', exact: true })
  await form.waitFor()

  // An OpenAI-compatible provider pointed at the fake, with a key, a header and a quirk.
  await form.getByLabel('Kind').selectOption('openai-compatible')
  await form.getByLabel(/^Name/).fill('acme-ai')
  await form.getByLabel(/^Base URL/).fill(compat.url)
  await form.getByLabel('API key (optional)').fill(COMPAT_KEY)
  await form.getByLabel('Extra headers (JSON)').fill(JSON.stringify({ 'x-tenant': HEADER_SECRET }))
  await form.getByLabel(/^Models/).fill('acme-large, acme-small')
  await form.getByLabel('System messages as').selectOption('user')
  await form.getByRole('button', { name: 'Save provider' }).click()
  const table = page.getByRole('table', { name: 'Providers', exact: true })
  const acme = table.getByRole('row').filter({ hasText: 'acme-ai' })
  await acme.waitFor()
  const acmeText = await acme.textContent()
  expect(acmeText).toContain('openai-compatible')
  expect(acmeText).toContain(compat.url)
  expect(acmeText).toContain('acme-large, acme-small')
  expect(acmeText).toContain('sk-…6789')
  // The secret field is cleared after saving.
  expect(await form.getByLabel('API key (optional)').inputValue()).toBe('')
  await expectNoSecret()

  // A request to the new provider's model reaches the fake with the key, the header and the quirk applied.
  const res = await gw.chat({ model: 'acme-ai/acme-large', messages: [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Say hi please' }] })
  expect(res.status).toBe(200)
  const sent = compat.requests.find((r) => r.path.endsWith('/chat/completions'))
  expect(sent?.headers.authorization).toBe(`Bearer ${COMPAT_KEY}`)
  expect(sent?.headers['x-tenant']).toBe(HEADER_SECRET)
  expect(sent?.body).toMatchObject({ model: 'acme-large' })
  expect((sent?.body as { messages: { role: string }[] }).messages.map((m) => m.role)).toEqual(['user'])

  // A preset from the list: its name, no key, and its own quirks kept (Ollama reports no stream usage).
  await form.getByLabel(/^Preset/).selectOption('ollama')
  expect(await form.getByLabel(/^Name/).inputValue()).toBe('ollama')
  expect(await form.getByLabel('Reports stream usage').isChecked()).toBe(false)
  await form.getByLabel(/^Base URL/).fill(compat.url)
  await form.getByLabel(/^Models/).fill('')
  await form.getByLabel('System messages as').selectOption('system')
  await form.getByLabel('Extra headers (JSON)').fill('')
  await form.getByRole('button', { name: 'Save provider' }).click()
  await table.getByRole('row').filter({ hasText: 'ollama' }).waitFor()
  const shown = (await (await gw.admin('GET', '/orgs/default')).json()) as { providers: Record<string, unknown>[] }
  expect(shown.providers.find((p) => p.provider === 'ollama')).toMatchObject({ kind: 'openai-compatible', apiKey: '****', headers: [], quirks: { streamUsage: false, systemRole: 'system' } })

  // A Bedrock provider with access keys and a session token.
  await form.getByLabel('Kind').selectOption('bedrock')
  await form.getByLabel(/^Name/).fill('aws')
  await form.getByLabel('Region').fill('eu-west-3')
  await form.getByLabel('Access key id').fill('AKIAIOSFODNN7EXAMPLE')
  await form.getByLabel('Secret access key').fill(AWS_SECRET)
  await form.getByLabel('Session token (optional)').fill(AWS_SESSION)
  await form.getByRole('button', { name: 'Save provider' }).click()
  const aws = table.getByRole('row').filter({ hasText: 'eu-west-3' })
  await aws.waitFor()
  const awsText = await aws.textContent()
  expect(awsText).toContain('bedrock')
  expect(awsText).toContain('AKI…MPLE')
  expect(await form.getByLabel('Secret access key').inputValue()).toBe('')
  expect(await form.getByLabel('Session token (optional)').inputValue()).toBe('')
  await expectNoSecret()

  // After a reload: both listed, no secret anywhere in the page, the secret fields empty.
  await page.reload()
  await table.getByRole('row').filter({ hasText: 'acme-ai' }).waitFor()
  await table.getByRole('row').filter({ hasText: 'eu-west-3' }).waitFor()
  await expectNoSecret()
  // The server holds what the page set (the admin API answers, masked).
  const org = (await (await gw.admin('GET', '/orgs/default')).json()) as { providers: Record<string, unknown>[] }
  expect(org.providers.find((p) => p.provider === 'aws')).toMatchObject({ kind: 'bedrock', region: 'eu-west-3', auth: 'sigv4' })
  expect(org.providers.find((p) => p.provider === 'acme-ai')).toMatchObject({ kind: 'openai-compatible', headers: ['x-tenant'], quirks: { systemRole: 'user' } })

  // An invalid region: the server's message, shown as the other forms do; nothing new is listed.
  await form.getByLabel('Kind').selectOption('bedrock')
  await form.getByLabel(/^Name/).fill('aws-bad')
  await form.getByLabel('Region').fill('Mars')
  await form.getByLabel('Bedrock API key').fill('bedrock-api-key-0000')
  await form.getByRole('button', { name: 'Save provider' }).click()
  await expect(form.getByRole('alert').textContent()).resolves.toContain('Invalid field "region"')
  expect(await table.getByRole('row').filter({ hasText: 'aws-bad' }).count()).toBe(0)
  expect(b.errors.filter((e) => !/status of 400/.test(e))).toEqual([])
  // The page asked nothing but gw.
  expect(b.requests.filter((u) => !u.startsWith(gw.url))).toEqual([])
}, 60_000)
