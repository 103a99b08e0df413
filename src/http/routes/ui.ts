// The dashboard (PRODUCT §15): its page at /ui (bundled by Bun, embedded in the binary) and sign-in/out.

import { Elysia } from 'elysia'
import { GatewayError, unauthorized } from '../../errors'
import index from '../../ui/index.html'
import { CSRF_HEADER, SESSION_COOKIE, type Session, type SessionKeeper, SignInThrottle } from '../../ui/session'
import { cookieOf, readJsonBody, sameOrigin } from '../request-context'
import { json } from './admin'

function cookieHeader(request: Request, value: string, maxAgeSeconds: number): string {
  const https = new URL(request.url).protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${https ? '; Secure' : ''}`
}

const publicSession = (s: Session) => ({ csrf: s.csrf, expiresAt: new Date(s.expiresAt).toISOString(), csrfHeader: CSRF_HEADER })

/**
 * The page and its assets, as Bun.serve static routes (Bun bundles the HTML import; in the compiled
 * binary the bundle is embedded). Elysia hands `serve.routes` to Bun.serve as they are. None without
 * GW_ADMIN_TOKEN, like the admin API.
 */
export function uiPageRoutes(adminToken: string | undefined): Record<string, typeof index> {
  return adminToken ? { '/ui': index, '/ui/': index } : {}
}

/** Sign-in, session and sign-out; off (no routes) without GW_ADMIN_TOKEN. */
export function uiRoutes(adminToken: string | undefined, sessions: SessionKeeper | undefined) {
  const app = new Elysia({ name: 'ui-routes' })
  if (!adminToken || !sessions) return app
  const throttle = new SignInThrottle()
  return app
    // 200 either way: the page asks this on load, and a 401 would be a console error in every browser.
    .get('/ui/session', ({ request }) => {
      const s = sessions.verify(cookieOf(request, SESSION_COOKIE))
      return json(request, s ? { signedIn: true, ...publicSession(s) } : { signedIn: false })
    })
    .post(
      '/ui/session',
      async ({ request, server }) => {
        const client = server?.requestIP(request)?.address ?? 'unknown'
        const wait = throttle.waitMs(client)
        if (wait > 0) {
          const seconds = Math.ceil(wait / 1000)
          throw new GatewayError(429, 'rate_limit_exceeded', `Too many wrong tokens: try again in ${seconds} s`, {
            headers: { 'retry-after': String(seconds) },
          })
        }
        if (!sameOrigin(request)) throw new GatewayError(403, 'forbidden', 'Sign in from the dashboard itself')
        const body = (await readJsonBody(request, 16 * 1024)).value as { token?: unknown }
        const given = Buffer.from(typeof body?.token === 'string' ? body.token : '')
        const want = Buffer.from(adminToken)
        if (given.length !== want.length || !crypto.timingSafeEqual(given, want)) {
          throttle.fail(client)
          throw unauthorized('Wrong admin token (the value of GW_ADMIN_TOKEN)')
        }
        throttle.succeed(client)
        const { session, cookie } = sessions.create()
        const res = json(request, publicSession(session), 201)
        res.headers.set('set-cookie', cookieHeader(request, cookie, Math.floor((session.expiresAt - Date.now()) / 1000)))
        return res
      },
      { parse: 'none' },
    )
    .delete('/ui/session', ({ request }) => {
      const s = sessions.verify(cookieOf(request, SESSION_COOKIE))
      if (s) {
        if (!sameOrigin(request) || !sessions.checkCsrf(s, request.headers.get(CSRF_HEADER)))
          throw new GatewayError(403, 'forbidden', `Signing out needs the session's ${CSRF_HEADER} header`)
        sessions.revoke(s)
      }
      const res = json(request, null, 204)
      res.headers.set('set-cookie', cookieHeader(request, '', 0))
      return res
    })
}
