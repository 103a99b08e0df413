// The dashboard's people pages (PRODUCT §18) in Chromium: an owner invites a viewer (a first-sign-in link shown
// once), changes a role and removes a user; the Audit page shows who changed what; a viewer sees no edit controls
// (and the server refuses the change anyway); an admin edits only its own orgs; a user of any role makes and revokes
// its own personal tokens and changes its password on the Account page.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { type Browser, browserAvailable, openBrowser } from '../helpers/browser'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

const enabled = browserAvailable()
const t = enabled ? test : test.skip

let gw: TestGateway
let b: Browser
let page: Page
let inviteLink = ''

beforeAll(async () => {
  if (!enabled) return
  gw = await startTestGateway()
  expect((await gw.admin('POST', '/orgs', { id: 'other', name: 'Other' })).status).toBe(201)
  b = await openBrowser()
  page = b.page
}, 60_000)

afterAll(async () => {
  if (!enabled) return
  await b.close()
  await gw.stop()
})

const nav = (name: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name })

async function signInWithToken() {
  await page.goto(`${gw.url}/ui`)
  await page.getByRole('button', { name: 'Use the admin token instead' }).click()
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await nav('Users').waitFor()
}

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor()
}

t('an owner invites a viewer: the first-sign-in link is shown once; roles are changed and users removed', async () => {
  // No users yet: the admin-token form comes first.
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await nav('Users').click()
  const form = page.getByRole('form', { name: 'Invite a user' })
  await form.getByLabel('Email').fill('vera@example.com')
  await form.getByLabel('Role').selectOption('viewer')
  await form.getByLabel('Orgs').fill('default')
  await form.getByRole('button', { name: 'Invite' }).click()
  const shown = page.getByRole('status')
  await shown.waitFor()
  inviteLink = (await shown.locator('code').textContent()) ?? ''
  expect(inviteLink).toMatch(new RegExp(`^${gw.url}/ui/#first-sign-in=[\\w-]+$`))
  await shown.getByRole('button', { name: 'Done' }).click()
  const table = page.getByRole('table', { name: 'Users' })
  await expect(table.getByRole('row').filter({ hasText: 'vera@example.com' }).textContent()).resolves.toContain('not yet')
  // Another user, made an admin of "other", then removed.
  await form.getByLabel('Email').fill('temp@example.com')
  await form.getByRole('button', { name: 'Invite' }).click()
  await page.getByRole('status').getByRole('button', { name: 'Done' }).click()
  await page.getByLabel('Role of temp@example.com').selectOption('admin')
  await page.getByLabel('Orgs of temp@example.com').fill('other')
  await table.getByRole('row').filter({ hasText: 'temp@example.com' }).getByRole('button', { name: 'Save' }).click()
  await table.getByRole('row').filter({ hasText: 'temp@example.com' }).getByRole('button', { name: 'Save' }).waitFor({ state: 'detached' })
  const users = (await (await gw.admin('GET', '/users')).json()) as { data: { email: string; role: string; orgs: string[] }[] }
  expect(users.data.find((u) => u.email === 'temp@example.com')).toMatchObject({ role: 'admin', orgs: ['other'] })
  await page.getByRole('button', { name: 'Remove temp@example.com' }).click()
  await table.getByRole('row').filter({ hasText: 'temp@example.com' }).waitFor({ state: 'detached' })
})

t('the Audit page lists those changes, newest first, with their before and after', async () => {
  await nav('Audit').click()
  await page.getByLabel('Only org default').uncheck()
  const table = page.getByRole('table', { name: 'Audit log' })
  // Every org's entries (the users' have none) once the filter is off.
  await table.getByRole('row').filter({ hasText: 'user.delete' }).waitFor()
  const first = table.getByRole('row').nth(1)
  await expect(first.textContent()).resolves.toContain('user.delete')
  await first.getByRole('button', { name: 'Before / after' }).click()
  await expect(table.textContent()).resolves.toContain('temp@example.com')
  await expect(table.textContent()).resolves.toContain('user.update')
  await expect(table.textContent()).resolves.toContain('admin-token')
  await signOut()
})

t('the invited viewer opens the link, sets a password and sees no edit controls; the server refuses a change anyway', async () => {
  await page.goto(inviteLink.replace('/ui/#', '/ui/?invited=1#'))
  await page.getByLabel('New password').fill('a viewer password 123')
  await page.getByRole('button', { name: 'Set password' }).click()
  await nav('Keys').click()
  await page.getByRole('heading', { name: 'Service keys' }).waitFor()
  await expect(page.getByText('vera@example.com · viewer (read only)').count()).resolves.toBe(1)
  for (const name of ['Create key', 'Save provider key', 'Create secret']) expect(await page.getByRole('button', { name }).count()).toBe(0)
  await nav('Policy & access').click()
  await page.getByRole('heading', { name: 'Policy', exact: true }).waitFor()
  expect(await page.getByRole('form', { name: 'Policy' }).count()).toBe(0)
  expect(await page.getByRole('button', { name: 'Save route' }).count()).toBe(0)
  await nav('Prompts').click()
  expect(await page.getByRole('button', { name: 'Create prompt' }).count()).toBe(0)
  await nav('MCP').click()
  await page.getByRole('heading', { name: 'MCP servers' }).waitFor()
  expect(await page.getByRole('form', { name: 'Register an MCP server' }).count()).toBe(0)
  expect(await nav('Users').count()).toBe(0)
  // The page hides the controls; the server is what refuses.
  const refused = await page.evaluate(async () => {
    const session = (await (await fetch('/ui/session')).json()) as { csrf: string }
    const res = await fetch('/admin/orgs/default/policy', { method: 'PUT', headers: { 'content-type': 'application/json', 'x-gw-csrf': session.csrf }, body: '{"maxTokens":1}' })
    return { status: res.status, body: await res.json() }
  })
  expect(refused).toMatchObject({ status: 403, body: { code: 'forbidden' } })
  expect(((await (await gw.admin('GET', '/orgs/default')).json()) as { policy: object }).policy).toEqual({})
  await signOut()
})

t('an admin edits its own org and only reads another it is given no role in', async () => {
  const u = (await (await gw.admin('POST', '/users', { email: 'adam@example.com', role: 'admin', orgs: ['other'] })).json()) as { id: string }
  expect((await gw.admin('PUT', `/users/${u.id}/password`, { password: 'an admin password 123' })).status).toBe(204)
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Email').fill('adam@example.com')
  await page.getByLabel('Password').fill('an admin password 123')
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await nav('Keys').click()
  // Only its own org is listed, and there it has the edit controls.
  await expect(page.getByLabel('Org').locator('option').allTextContents()).resolves.toEqual(['Other (other)'])
  await page.getByRole('button', { name: 'Create key' }).click()
  const made = page.getByRole('status')
  const oldKey = (await made.locator('code').textContent()) ?? ''
  await made.getByRole('button', { name: 'Done' }).click()
  // Rotating without a grace (the dialog's default) shows the new key once and revokes the old one.
  const oldId = `sk_${oldKey.slice('gw_sk_'.length, 'gw_sk_'.length + 12)}`
  await page.getByRole('button', { name: `Rotate ${oldId}` }).click()
  const rotated = page.getByRole('status')
  await rotated.waitFor()
  const newKey = (await rotated.locator('code').textContent()) ?? ''
  expect(newKey).toMatch(/^gw_sk_/)
  expect(newKey).not.toBe(oldKey)
  await rotated.getByRole('button', { name: 'Done' }).click()
  await expect(page.getByRole('row').filter({ hasText: oldId }).textContent()).resolves.toContain('revoked')
  expect((await gw.fetch('/v1/models', { headers: { authorization: `GwKey ${oldKey}` } })).status).toBe(401)
  expect((await gw.fetch('/v1/models', { headers: { authorization: `GwKey ${newKey}` } })).status).toBe(200)
  expect(await nav('Users').count()).toBe(0)
  await signOut()
})

t("an owner sees a user's personal tokens with their last use and revokes one: it is refused from then on, the other still works", async () => {
  const users = (await (await gw.admin('GET', '/users')).json()) as { data: { id: string; email: string }[] }
  const adam = users.data.find((u) => u.email === 'adam@example.com') as { id: string }
  const made = async (name: string) => (await (await gw.admin('POST', `/users/${adam.id}/tokens`, { name })).json()) as { id: string; token: string }
  const laptop = await made('laptop')
  const ci = await made('ci')
  const me = (token: string) => gw.fetch('/admin/me', { headers: { authorization: `Bearer ${token}` } })
  expect((await me(laptop.token)).status).toBe(200)
  await signInWithToken()
  await nav('Users').click()
  await page.getByRole('button', { name: 'Personal tokens of adam@example.com' }).click()
  const tokens = page.getByRole('table', { name: 'Tokens of adam@example.com' })
  const row = (name: string) => tokens.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) })
  await row('laptop').waitFor()
  // The last-used column: a time for the token just used, none for the other.
  await expect(row('laptop').locator('td').nth(3).textContent()).resolves.not.toBe('—')
  await expect(row('ci').locator('td').nth(3).textContent()).resolves.toBe('—')
  await expect(tokens.textContent()).resolves.not.toContain(laptop.token)
  await page.getByRole('button', { name: 'Revoke token laptop' }).click()
  await row('laptop').waitFor({ state: 'detached' })
  expect((await me(laptop.token)).status).toBe(401)
  expect((await me(ci.token)).status).toBe(200)
  await signOut()
})

t('a viewer makes a personal token on its Account page (shown once, it reads with the viewer role), revokes it, and changes its password', async () => {
  await page.goto(`${gw.url}/ui`)
  await page.getByLabel('Email').fill('vera@example.com')
  await page.getByLabel('Password').fill('a viewer password 123')
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await nav('Account').click()
  await expect(page.locator('dl.facts').textContent()).resolves.toBe('Emailvera@example.comName—RoleviewerOrgsdefault')
  // A viewer changes nothing in its orgs, but its own tokens are its own.
  await page.getByText('No personal tokens.').waitFor()
  const form = page.getByRole('form', { name: 'Create a personal token' })
  await form.getByLabel('Token name (optional)').fill('laptop')
  await form.getByRole('button', { name: 'Create token' }).click()
  const shown = page.getByRole('status')
  await expect(shown.textContent()).resolves.toContain('Personal token laptop')
  const token = (await shown.locator('code').textContent()) ?? ''
  expect(token).toMatch(/^gw_at_/)
  await shown.getByRole('button', { name: 'Done' }).click()
  await expect(page.locator('body').textContent()).resolves.not.toContain(token)
  const row = page.getByRole('table', { name: 'Your tokens' }).getByRole('row').filter({ has: page.getByRole('cell', { name: 'laptop', exact: true }) })
  await row.waitFor()
  // The token acts as the viewer: it reads its org, and a change is refused.
  const bearer = (path: string, init: RequestInit = {}) => gw.fetch(path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
  expect(await (await bearer('/admin/me')).json()).toMatchObject({ kind: 'user', email: 'vera@example.com', role: 'viewer' })
  expect((await bearer('/admin/orgs/default')).status).toBe(200)
  expect((await bearer('/admin/orgs/default/policy', { method: 'PUT', body: '{"maxTokens":1}' })).status).toBe(403)
  const audit = (await (await gw.admin('GET', '/audit?action=user.token.create')).json()) as { data: { actor: { email?: string }; after: { name: string } }[] }
  expect(audit.data[0]).toMatchObject({ actor: { email: 'vera@example.com' }, after: { name: 'laptop' } })
  await page.getByRole('button', { name: 'Revoke token laptop' }).click()
  await row.waitFor({ state: 'detached' })
  expect((await bearer('/admin/me')).status).toBe(401)
  // A new password: the old one no longer signs in, the new one does.
  const pw = page.getByRole('form', { name: 'Change your password' })
  await pw.getByLabel('New password').fill('a new viewer password 456')
  await pw.getByRole('button', { name: 'Change password' }).click()
  await page.getByText('Password changed.').waitFor()
  const signIn = (password: string) => fetch(`${gw.url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'vera@example.com', password }) })
  expect((await signIn('a viewer password 123')).status).toBe(401)
  expect((await signIn('a new viewer password 456')).status).toBe(201)
  await signOut()
})

t('signed in with the admin token there is no Account page (the token is no user)', async () => {
  await signInWithToken()
  expect(await nav('Account').count()).toBe(0)
  await signOut()
})

t('the console stays clean (but for the refusal the viewer provoked)', () => {
  expect(b.errors.filter((e) => !/status of 403/.test(e))).toEqual([])
})
