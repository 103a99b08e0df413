// A page on another port that puts gw's dashboard in an iframe: the browser refuses to show it (X-Frame-Options, CSP frame-ancestors).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type Browser, browserAvailable, openBrowser } from '../helpers/browser'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const enabled = browserAvailable()
let gw: TestGateway
let b: Browser
let framer: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  if (!enabled) return
  gw = await startTestGateway()
  // Another origin (its own port) whose page frames the dashboard, as a click-jacking page would.
  framer = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => new Response(`<!doctype html><title>framer</title><iframe id="gw" src="${gw.url}/ui" width="800" height="600"></iframe>`, { headers: { 'content-type': 'text/html' } }),
  })
  b = await openBrowser()
}, 60_000)

afterAll(async () => {
  if (!enabled) return
  await b.close()
  framer.stop(true)
  await gw.stop()
})

;(enabled ? test : test.skip)('a page on another port cannot show /ui in a frame', async () => {
  // The dashboard itself loads (control: the sign-in form is there when it is not framed).
  await b.page.goto(`${gw.url}/ui`)
  await b.page.getByLabel('Admin token').waitFor()

  const framed = await b.context.newPage()
  const answered = framed.waitForResponse((r) => r.url() === `${gw.url}/ui`)
  await framed.goto(`http://127.0.0.1:${framer.port}/`)
  expect((await answered).status()).toBe(200) // gw answered; the browser then refused to render it
  await framed.waitForTimeout(500)
  const frame = framed.frames().find((f) => f !== framed.mainFrame())
  expect(frame).toBeDefined()
  // Chromium replaces a refused frame with its own error page: no dashboard script ran, no sign-in form.
  expect(frame?.url()).not.toBe(`${gw.url}/ui`)
  expect(await frame?.locator('input').count()).toBe(0)
  await framed.close()
}, 30_000)
