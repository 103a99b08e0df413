// Debian's Chromium driven by playwright-core, with a fresh profile, recording console errors and every host the page asked.

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** False (with the reason printed) when Chromium is missing outside CI; under CI=true a missing browser fails. */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true
  if (process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`)
  console.warn(`skipping browser tests: ${CHROMIUM} is missing (apt-get install -y chromium)`)
  return false
}

export interface Browser {
  context: BrowserContext
  page: Page
  /** Console errors and uncaught page errors, in order. */
  errors: string[]
  /** Every URL the page requested. */
  requests: string[]
  close(): Promise<void>
}

/**
 * The page's requests are recorded through a CDP session of its own (`Network.requestWillBeSent`: plain
 * data), not Playwright's request events: those make Playwright's client track request and response
 * objects, and it failed in CI with "Cannot find parent object request@…" and "Object with guid
 * response@… was not bound in the connection" on pages navigated while their requests were answered.
 */
export async function openBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'gw-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  const errors: string[] = []
  const requests: string[] = []
  const page = context.pages()[0] ?? (await context.newPage())
  const cdp = await context.newCDPSession(page)
  // data: URLs (the browser's own icons among them) reach no host: not requests here, as in Playwright's events.
  cdp.on('Network.requestWillBeSent', (e) => {
    if (!e.request.url.startsWith('data:')) requests.push(e.request.url)
  })
  await cdp.send('Network.enable')
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text())
  })
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`))
  // confirm() ("Revoke this key?") is answered yes.
  page.on('dialog', (d) => void d.accept())
  return {
    context,
    page,
    errors,
    requests,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
