// The MCP page in a real browser (Debian's Chromium): a server registered from the page is listed, its bearer
// secret and header values never come back into the page (not after a reload either), an agent then calls its
// tools through gw with that secret, the client configuration is shown, an invalid name shows the server's
// message, and an OAuth server's users are listed (never their tokens) and forgotten.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Page } from 'playwright-core'
import { type FakeMcpServer, startMcpServer } from '../fakes/mcp-server'
import { type Browser, browserAvailable, openBrowser } from '../helpers/browser'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

const enabled = browserAvailable()
const BEARER = 'mcp-bearer-FROM-THE-PAGE-0123456789'
const HEADER_SECRET = 'team-secret-FROM-THE-PAGE-4242'

let tools: FakeMcpServer
let gw: TestGateway
let b: Browser
let page: Page

beforeAll(async () => {
  if (!enabled) return
  tools = await startMcpServer({ build: (s) => s.registerTool('ping', { description: 'p' }, async () => ({ content: [{ type: 'text', text: 'pong' }] })) })
  gw = await startTestGateway({})
  b = await openBrowser()
  page = b.page
}, 60_000)

afterAll(async () => {
  if (!enabled) return
  await b.close()
  await gw.stop()
  await tools.stop()
})

const t = enabled ? test : test.skip

async function expectNoSecret() {
  const html = await page.content()
  expect(html).not.toContain(BEARER)
  expect(html).not.toContain(HEADER_SECRET)
}

t('an MCP server registered from the page is listed without its secrets and its tools answer through gw', async () => {
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'MCP' }).click()
  const form = page.getByRole('form', { name: 'Register an MCP server' })
  await form.waitFor()
  await form.getByLabel(/^Name/).fill('tools')
  await form.getByLabel(/^URL/).fill(tools.url)
  await form.getByRole('combobox').selectOption('bearer')
  await form.getByLabel('Bearer secret', { exact: true }).fill(BEARER)
  await form.getByLabel(/^Headers/).fill(JSON.stringify({ 'x-team': HEADER_SECRET }))
  await form.getByRole('button', { name: 'Save MCP server' }).click()
  const table = page.getByRole('table', { name: 'MCP servers' })
  const row = table.getByRole('row').filter({ hasText: 'tools' })
  await row.waitFor()
  const text = await row.textContent()
  expect(text).toContain(tools.url)
  expect(text).toContain('bearer')
  expect(text).toContain('x-team')
  await expectNoSecret()
  // The configuration an agent needs names gw's /mcp.
  expect(await page.getByLabel('Client configuration').textContent()).toContain(`${gw.url}/mcp`)

  // An agent calls the server's tool through gw; the server gets the secret set from the page.
  let callId = ''
  const agent = new Client({ name: 'agent', version: '1' })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${gw.key}` } } }))
  try {
    const result = await agent.callTool({ name: 'tools__ping', arguments: {} })
    expect(result.content).toEqual([{ type: 'text', text: 'pong' }])
    callId = (result._meta as Record<string, string>)['gw/requestId'] as string
  } finally {
    await agent.close()
  }
  // The call is in the Logs page, its entry naming the tool and the server.
  await page.goto(`${gw.url}/ui#/logs/${callId}`)
  const drawer = page.getByRole('complementary', { name: 'Log entry' })
  await drawer.getByText('ping on the server tools').waitFor()
  await page.goto(`${gw.url}/ui#/mcp`)
  const call = tools.requests.find((r) => r.rpc === 'tools/call')
  expect(call?.headers.authorization).toBe(`Bearer ${BEARER}`)
  expect(call?.headers['x-team']).toBe(HEADER_SECRET)

  await page.reload()
  await table.getByRole('row').filter({ hasText: 'tools' }).waitFor()
  await expectNoSecret()

  // An invalid name: the server's message; nothing new is listed.
  await form.getByLabel(/^Name/).fill('Bad__Name')
  await form.getByLabel(/^URL/).fill(tools.url)
  await form.getByRole('button', { name: 'Save MCP server' }).click()
  await expect(form.getByRole('alert').textContent()).resolves.toContain('Invalid MCP server name')
  // The tool policy is set on the Policy & access page and shown here.
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Policy & access' }).click()
  await page.getByLabel('MCP tools denied').fill('tools__ping, other__*')
  await page.getByLabel('MCP tool calls per minute').fill('60')
  await page.getByRole('button', { name: 'Save policy' }).click()
  await page.getByRole('status').filter({ hasText: 'Saved.' }).first().waitFor()
  const policy = ((await (await gw.admin('GET', '/orgs/default')).json()) as { policy: { mcp?: unknown } }).policy
  expect(policy.mcp).toEqual({ deniedTools: ['tools__ping', 'other__*'], requestsPerMinute: 60 })
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'MCP' }).click()
  await page.getByText('"requestsPerMinute": 60').waitFor()
  // Removing it (the helper accepts the confirm dialog).
  await table.getByRole('button', { name: 'Remove MCP server tools' }).click()
  await page.getByText('No MCP servers yet').waitFor()

  // An OAuth server: the users gw holds tokens for are listed (never the tokens) and can be forgotten.
  await gw.admin('PUT', '/orgs/default/mcp-servers/crm', { url: 'https://crm.example/mcp', auth: { kind: 'oauth' } })
  await gw.gw.deps.store.mcp.putUserTokens('default', 'crm', 'alice', JSON.stringify({ tokens: { access_token: 'alice-TOKEN-never-in-the-page', token_type: 'Bearer' } }))
  await page.reload()
  const users = page.getByRole('table', { name: 'Users of crm' })
  await users.getByRole('row').filter({ hasText: 'alice' }).waitFor()
  expect(await users.textContent()).toContain('authorised')
  expect(await page.content()).not.toContain('alice-TOKEN-never-in-the-page')
  await users.getByRole('button', { name: 'Forget alice at crm' }).click()
  await page.getByText('Nobody has authorised gw at this server yet.').waitFor()
  expect(await gw.gw.deps.store.mcp.getUserTokens('default', 'crm', 'alice')).toBeUndefined()
  expect(b.errors.filter((e) => !/status of 400/.test(e))).toEqual([])
  expect(b.requests.filter((u) => !u.startsWith(gw.url))).toEqual([])
}, 60_000)
