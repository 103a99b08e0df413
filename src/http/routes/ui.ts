// The dashboard (PRODUCT §15): its page at /ui (bundled by Bun, embedded in the binary) and sign-in/out.

import { Elysia } from 'elysia'
import { GatewayError, notFound, unauthorized } from '../../errors'
import { ASSETS_PATH, dashboardBundle, devPageRoutes, FRAME_HEADERS, fileResponse } from '../../ui/bundle'
import { CSRF_HEADER, SESSION_COOKIE, type Session } from '../../ui/session'
import { cookieOf, readJsonBody, sameOrigin } from '../request-context'
import { type AdminGuard, json } from './admin'

function cookieHeader(request: Request, value: string, maxAgeSeconds: number): string {
  const https = new URL(request.url).protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${https ? '; Secure' : ''}`
}

/** Whether a request URL is under /ui; on every request, so without parsing the URL. */
const isDashboardUrl = (url: string) => {
  const path = url.slice(url.indexOf('/', url.indexOf('//') + 2))
  return path === '/ui' || path.startsWith('/ui/') || path.startsWith('/ui?')
}

const publicSession = (s: Session) => ({ csrf: s.csrf, expiresAt: new Date(s.expiresAt).toISOString(), csrfHeader: CSRF_HEADER })

/**
 * Under `npm run dev` the page is a Bun.serve static route (bundled on request, hot reload; Elysia
 * hands `serve.routes` to Bun.serve as they are), without the headers below. None without GW_ADMIN_TOKEN.
 */
export function uiPageRoutes(adminToken: string | undefined, dev: boolean): Partial<typeof devPageRoutes> {
  return adminToken && dev ? devPageRoutes : {}
}

/** The page and its assets (bundled once, embedded in the binary), sign-in, session and sign-out; off (no routes) without GW_ADMIN_TOKEN. */
export function uiRoutes(guard: AdminGuard, dev: boolean) {
  const app = new Elysia({ name: 'ui-routes' })
  const sessions = guard.sessions
  if (!sessions) return app
  const page = async () => fileResponse((await dashboardBundle()).page, false)
  return app
    // Every answer under /ui, errors included, forbids framing (docs/dashboard.md).
    .onRequest(({ request, set }) => {
      if (isDashboardUrl(request.url)) Object.assign(set.headers, FRAME_HEADERS)
    })
    .use(dev ? new Elysia() : new Elysia().get('/ui', page).get('/ui/', page))
    .get(`${ASSETS_PATH}:file`, async ({ request, params }) => {
      const file = (await dashboardBundle()).assets.get(params.file)
      if (!file) throw notFound(`No dashboard file ${new URL(request.url).pathname.slice(0, 128)}`)
      return fileResponse(file, true)
    })
    // 200 either way: the page asks this on load, and a 401 would be a console error in every browser.
    .get('/ui/session', async ({ request }) => {
      const s = await sessions.verify(cookieOf(request, SESSION_COOKIE))
      return json(request, s ? { signedIn: true, ...publicSession(s) } : { signedIn: false })
    })
    .post(
      '/ui/session',
      async ({ request, server }) => {
        if (!sameOrigin(request)) throw new GatewayError(403, 'forbidden', 'Sign in from the dashboard itself')
        const body = (await readJsonBody(request, 16 * 1024)).value as { token?: unknown }
        // A wrong token is answered late once its client has sent several (GuessBrake); the right one never waits.
        if (!(await guard.tokenMatches(typeof body?.token === 'string' ? body.token : '', request, server)))
          throw unauthorized('Wrong admin token (the value of GW_ADMIN_TOKEN)')
        const { session, cookie } = await sessions.create()
        const res = json(request, publicSession(session), 201)
        res.headers.set('set-cookie', cookieHeader(request, cookie, Math.floor((session.expiresAt - Date.now()) / 1000)))
        return res
      },
      { parse: 'none' },
    )
    .delete('/ui/session', async ({ request }) => {
      const s = await sessions.verify(cookieOf(request, SESSION_COOKIE))
      if (s) {
        if (!sameOrigin(request) || !sessions.checkCsrf(s, request.headers.get(CSRF_HEADER)))
          throw new GatewayError(403, 'forbidden', `Signing out needs the session's ${CSRF_HEADER} header`)
        await sessions.revoke(s)
      }
      const res = json(request, null, 204)
      res.headers.set('set-cookie', cookieHeader(request, '', 0))
      return res
    })
}
