// GW_ADMIN_HOST/GW_ADMIN_PORT: the admin API, the dashboard and /metrics on a listener of their own; the public listener serves only the client API.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway
let adminUrl: string

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_ADMIN_HOST: '127.0.0.1', GW_ADMIN_PORT: '0' })
  adminUrl = gw.gw.adminUrl as string
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

const asAdmin = { authorization: `Bearer ${ADMIN_TOKEN}` }

test('the public listener answers clients and health, and 404s /admin, /metrics and /ui even with the admin token', async () => {
  expect(adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  expect(adminUrl).not.toBe(gw.url)
  expect((await gw.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200)
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  for (const path of ['/admin/orgs/default', '/metrics', '/ui']) {
    const res = await fetch(`${gw.url}${path}`, { headers: asAdmin })
    expect({ path, status: res.status }).toEqual({ path, status: 404 })
    expect(((await res.json()) as { error: boolean }).error).toBe(true)
  }
})

test('the admin listener serves the admin API, the dashboard, /metrics and health, and not the client API', async () => {
  const org = await fetch(`${adminUrl}/admin/orgs/default`, { headers: asAdmin })
  expect(org.status).toBe(200)
  expect(((await org.json()) as { id: string }).id).toBe('default')
  expect((await fetch(`${adminUrl}/metrics`, { headers: asAdmin })).status).toBe(200)
  expect((await fetch(`${adminUrl}/health`)).status).toBe(200)
  const ui = await fetch(`${adminUrl}/ui`)
  expect({ status: ui.status, html: (await ui.text()).includes('<html') }).toEqual({ status: 200, html: true })
  const chat = await fetch(`${adminUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${gw.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  })
  expect(chat.status).toBe(404)
})
