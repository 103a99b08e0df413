// The dashboard (PRODUCT §15): its page at /ui (bundled by Bun, embedded in the binary) and sign-in/out.

import { Elysia } from 'elysia'
import { asActor } from '../../admin/audit'
import type { UserAdmin } from '../../admin/user-admin'
import { type DashboardSso, SSO_COOKIE, SSO_TTL_MS, SsoError } from '../../auth/ui-sso'
import type { Role, User } from '../../domain/people'
import { echo, GatewayError, notFound, unauthorized } from '../../errors'
import { ASSETS_PATH, dashboardBundle, devPageRoutes, FRAME_HEADERS, fileResponse } from '../../ui/bundle'
import { CSRF_HEADER, SESSION_COOKIE, type Session } from '../../ui/session'
import type { PeerSource } from '../client-address'
import { cookieOf, readJsonBody, sameOrigin } from '../request-context'
import { type AdminGuard, json } from './admin'

function cookieHeader(request: Request, value: string, maxAgeSeconds: number, name = SESSION_COOKIE, sameSite = 'Strict'): string {
  const https = new URL(request.url).protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
  return `${name}=${value}; Path=/; HttpOnly; SameSite=${sameSite}; Max-Age=${maxAgeSeconds}${https ? '; Secure' : ''}`
}

/** What signing in to the dashboard may use besides the admin token (PRODUCT §18). */
export interface DashboardSignIn {
  users: UserAdmin
  /** Single sign-on, when GW_UI_OIDC_* are set. */
  sso?: DashboardSso
  /** Who an unknown verified email becomes (GW_UI_OIDC_DEFAULT_ROLE); undefined: refused. */
  defaultRole?: Role
  defaultOrgs: readonly string[]
  /** GW_PUBLIC_URL: gw's address as browsers reach it (else the request's own origin). */
  publicUrl?: string
}

const redirect = (location: string, cookies: string[]) => {
  const headers = new Headers({ location, 'cache-control': 'no-store' })
  for (const c of cookies) headers.append('set-cookie', c)
  return new Response(null, { status: 302, headers })
}

/** Whether a request URL is under /ui; on every request, so without parsing the URL. */
const isDashboardUrl = (url: string) => {
  const path = url.indexOf('/', url.indexOf('//') + 2)
  if (!url.startsWith('/ui', path)) return false
  const next = url.charCodeAt(path + 3)
  // `/ui` alone, or followed by `/` or `?`.
  return Number.isNaN(next) || next === 47 || next === 63
}

const publicSession = (s: Session, user?: User) => ({
  csrf: s.csrf,
  expiresAt: new Date(s.expiresAt).toISOString(),
  csrfHeader: CSRF_HEADER,
  user: user ? { id: user.id, email: user.email, name: user.name ?? null, role: user.role, hasPassword: user.hasPassword } : null,
})

/**
 * Under `npm run dev` the page is a Bun.serve static route (bundled on request, hot reload; Elysia
 * hands `serve.routes` to Bun.serve as they are), without the headers below. None without GW_ADMIN_TOKEN.
 */
export function uiPageRoutes(adminToken: string | undefined, dev: boolean): Partial<typeof devPageRoutes> {
  return adminToken && dev ? devPageRoutes : {}
}

/** The page and its assets (bundled once, embedded in the binary), sign-in, session and sign-out; off (no routes) without GW_ADMIN_TOKEN. */
export function uiRoutes(guard: AdminGuard, dev: boolean, signIn?: DashboardSignIn) {
  const app = new Elysia({ name: 'ui-routes' })
  const sessions = guard.sessions
  if (!sessions) return app
  const page = async () => fileResponse((await dashboardBundle()).page, false)
  const startSession = async (request: Request, user?: User, status = 201) => {
    const { session, cookie } = await sessions.create(user?.id)
    const res = json(request, publicSession(session, user), status)
    res.headers.set('set-cookie', cookieHeader(request, cookie, Math.floor((session.expiresAt - Date.now()) / 1000)))
    return res
  }
  /** Checks a credential under the guessing brake; the user it names, or 401 with `message`. */
  const signInWith = async <T>(request: Request, server: PeerSource | null, check: () => Promise<T | undefined>, message: string): Promise<T> => {
    let found: T | undefined
    if (!(await guard.slowed(request, server, async () => (found = await check()) !== undefined)) || found === undefined) throw unauthorized(message)
    return found
  }
  const sso = signIn?.sso
  const callbackUrl = (request: Request) => `${signIn?.publicUrl ?? new URL(request.url).origin}/ui/sso/callback`
  return app
    // Every answer under /ui, errors included, forbids framing (docs/dashboard.md).
    .onRequest(({ request, set }) => {
      if (isDashboardUrl(request.url)) Object.assign(set.headers, FRAME_HEADERS)
    })
    .use(dev ? new Elysia() : new Elysia().get('/ui', page).get('/ui/', page))
    .get(`${ASSETS_PATH}:file`, async ({ request, params }) => {
      const file = (await dashboardBundle()).assets.get(params.file)
      if (!file) throw notFound(`No dashboard file ${echo(params.file)}`)
      return fileResponse(file, true)
    })
    // 200 either way: the page asks this on load, and a 401 would be a console error in every browser.
    .get('/ui/session', async ({ request }) => {
      const s = await sessions.verify(cookieOf(request, SESSION_COOKIE))
      const user = await guard.userOf(s?.userId)
      const signedIn = s !== undefined && (s.userId === undefined || user !== undefined)
      if (s && signedIn) return json(request, { signedIn: true, sso: !!sso, ...publicSession(s, user) })
      // Until there are users, the admin token is the only way in: the page offers its form first.
      return json(request, { signedIn: false, sso: !!sso, users: !!signIn && (await signIn.users.list()).data.length > 0 })
    })
    .post(
      '/ui/session',
      async ({ request, server }) => {
        if (!sameOrigin(request)) throw new GatewayError(403, 'forbidden', 'Sign in from the dashboard itself')
        const body = (await readJsonBody(request, 16 * 1024)).value as { token?: unknown; email?: unknown; password?: unknown; link?: unknown }
        const text = (v: unknown) => (typeof v === 'string' ? v.slice(0, 1024) : '')
        const users = signIn?.users
        // A password (Argon2id) or a first-sign-in link names a user; wrong ones are slowed like wrong tokens.
        if (users && body?.email !== undefined)
          return startSession(request, await signInWith(request, server, () => users.checkPassword(text(body.email), text(body.password)), 'Wrong email or password'))
        if (users && body?.link !== undefined)
          return startSession(request, await signInWith(request, server, () => users.useSignInLink(text(body.link)), 'This sign-in link is unknown, used or expired: ask for another (gw user link)'))
        // A wrong token is answered late once its client has sent several (GuessBrake); the right one never waits.
        if (!(await guard.tokenMatches(text(body?.token), request, server))) throw unauthorized('Wrong admin token (the value of GW_ADMIN_TOKEN)')
        return startSession(request)
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
    // Single sign-on: to the provider with state, nonce and a PKCE challenge; back with a code (PRODUCT §18).
    .get('/ui/sso/start', async ({ request }) => {
      if (!sso) throw notFound('Single sign-on is not set up (GW_UI_OIDC_ISSUER, GW_UI_OIDC_CLIENT_ID, GW_UI_OIDC_CLIENT_SECRET)')
      try {
        const { location, cookie } = await sso.start(callbackUrl(request))
        // Lax: the cookie must come back on the provider's redirect, a top-level navigation from another site.
        return redirect(location, [cookieHeader(request, cookie, SSO_TTL_MS / 1000, SSO_COOKIE, 'Lax')])
      } catch (err) {
        return redirect(`/ui/#sso-error=${encodeURIComponent(ssoMessage(err))}`, [])
      }
    })
    .get('/ui/sso/callback', async ({ request, server }) => {
      if (!sso || !signIn) throw notFound('Single sign-on is not set up')
      const clear = cookieHeader(request, '', 0, SSO_COOKIE, 'Lax')
      try {
        const who = await sso.finish(new URL(request.url).searchParams, cookieOf(request, SSO_COOKIE), callbackUrl(request))
        let user = await signIn.users.byEmail(who.email)
        if (!user && signIn.defaultRole) {
          const role = signIn.defaultRole
          const orgs = role === 'owner' ? [] : [...signIn.defaultOrgs]
          const made = await asActor({ kind: 'user', email: who.email }, () => signIn.users.create({ email: who.email, role, orgs, ...(who.name ? { name: who.name } : {}) }), {
            ip: guard.addresses.of(request, server),
          })
          user = await signIn.users.get(made.id)
        }
        if (!user) throw new SsoError(`${who.email} has no user in gw: an owner must add it first (gw user create)`)
        const { session, cookie } = await sessions.create(user.id)
        return redirect('/ui/', [clear, cookieHeader(request, cookie, Math.floor((session.expiresAt - Date.now()) / 1000))])
      } catch (err) {
        return redirect(`/ui/#sso-error=${encodeURIComponent(ssoMessage(err))}`, [clear])
      }
    })
}

/** What the sign-in page says about a failed single sign-on: the SsoError's own words, else a plain sentence. */
function ssoMessage(err: unknown): string {
  if (err instanceof SsoError || err instanceof GatewayError) return err.message
  return 'The sign-in provider could not be reached'
}
