// An OAuth 2.1 authorization server for the MCP gateway's per-user OAuth tests: metadata (RFC 8414), dynamic
// client registration (RFC 7591), authorization code with PKCE S256 (verified at the token endpoint) and refresh.

import { createHash } from 'node:crypto'

export interface IssuedToken {
  user: string
  clientId: string
  expiresAt: number
}

export interface FakeAuthServer {
  url: string
  /** Every registration, token grant and authorisation, in order. */
  log: { kind: 'register' | 'authorize' | 'authorization_code' | 'refresh_token' | 'refused'; detail: string }[]
  /** The header names of every request it got, in order. */
  headerNames: string[][]
  /** Access tokens issued, by value. */
  tokens: Map<string, IssuedToken>
  /** The user an access token stands for while it is valid; undefined when unknown or expired. */
  verify(token: string): IssuedToken | undefined
  /** Seconds an access token lasts. */
  accessTtlSeconds: number
  /** Forgets every refresh token (a revoked grant): refreshing is then invalid_grant. */
  revokeRefreshTokens(): void
  stop(): void
}

const b64url = (b: Buffer) => b.toString('base64url')

/**
 * The user consents by opening the authorisation URL with `x-test-user: <name>` (the test stands in for the
 * browser and the login): the answer is the 302 back to the client's redirect_uri with the code and state.
 */
/** `registration: false`: no dynamic client registration; `clients`: clients registered by hand (id → redirect URIs). */
export function startAuthServer(opts: { registration?: boolean; clients?: Record<string, string[]> } = {}): FakeAuthServer {
  const clients = new Map<string, { redirectUris: string[] }>(Object.entries(opts.clients ?? {}).map(([id, redirectUris]) => [id, { redirectUris }]))
  const codes = new Map<string, { user: string; clientId: string; redirectUri: string; challenge: string; resource: string | null }>()
  const refresh = new Map<string, { user: string; clientId: string }>()
  const tokens = new Map<string, IssuedToken>()
  const log: FakeAuthServer['log'] = []
  let n = 0
  const fake: FakeAuthServer = {
    url: '',
    log,
    headerNames: [],
    tokens,
    accessTtlSeconds: 3600,
    verify(token) {
      const t = tokens.get(token)
      return t && t.expiresAt > Date.now() ? t : undefined
    },
    revokeRefreshTokens: () => refresh.clear(),
    stop: () => server.stop(true),
  }
  const refuse = (error: string, status = 400) => {
    log.push({ kind: 'refused', detail: error })
    return Response.json({ error }, { status })
  }
  const issue = (user: string, clientId: string) => {
    const access = `at-${user}-${++n}`
    const rt = `rt-${user}-${n}`
    tokens.set(access, { user, clientId, expiresAt: Date.now() + fake.accessTtlSeconds * 1000 })
    refresh.set(rt, { user, clientId })
    return Response.json({ access_token: access, token_type: 'Bearer', expires_in: fake.accessTtlSeconds, refresh_token: rt })
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      fake.headerNames.push([...req.headers.keys()])
      const url = new URL(req.url)
      const base = url.origin
      if (url.pathname === '/.well-known/oauth-authorization-server')
        return Response.json({
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          ...(opts.registration === false ? {} : { registration_endpoint: `${base}/register` }),
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
        })
      if (url.pathname === '/register' && req.method === 'POST' && opts.registration !== false) {
        const body = (await req.json()) as { redirect_uris?: string[] }
        const clientId = `client-${clients.size + 1}`
        clients.set(clientId, { redirectUris: body.redirect_uris ?? [] })
        log.push({ kind: 'register', detail: clientId })
        return Response.json({ ...body, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000) }, { status: 201 })
      }
      if (url.pathname === '/authorize') {
        const q = url.searchParams
        const client = clients.get(q.get('client_id') ?? '')
        const redirectUri = q.get('redirect_uri') ?? ''
        if (!client || !client.redirectUris.includes(redirectUri)) return refuse('invalid_client')
        if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return refuse('invalid_request')
        const user = req.headers.get('x-test-user')
        if (!user) return refuse('login_required', 401)
        const code = `code-${++n}`
        codes.set(code, { user, clientId: q.get('client_id') as string, redirectUri, challenge: q.get('code_challenge') as string, resource: q.get('resource') })
        log.push({ kind: 'authorize', detail: `${user} ${q.get('resource')}` })
        const back = new URL(redirectUri)
        back.searchParams.set('code', code)
        back.searchParams.set('state', q.get('state') ?? '')
        return new Response(null, { status: 302, headers: { location: back.href } })
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        const form = new URLSearchParams(await req.text())
        const grant = form.get('grant_type')
        if (grant === 'authorization_code') {
          const c = codes.get(form.get('code') ?? '')
          if (!c) return refuse('invalid_grant')
          codes.delete(form.get('code') as string)
          if (c.clientId !== form.get('client_id') || c.redirectUri !== form.get('redirect_uri')) return refuse('invalid_grant')
          const verifier = form.get('code_verifier') ?? ''
          if (b64url(createHash('sha256').update(verifier).digest()) !== c.challenge) return refuse('invalid_grant: PKCE verification failed')
          log.push({ kind: 'authorization_code', detail: c.user })
          return issue(c.user, c.clientId)
        }
        if (grant === 'refresh_token') {
          const r = refresh.get(form.get('refresh_token') ?? '')
          if (!r || r.clientId !== form.get('client_id')) return refuse('invalid_grant')
          // Rotated: a public client's refresh token works once (OAuth 2.1 §4.3.1).
          refresh.delete(form.get('refresh_token') ?? '')
          log.push({ kind: 'refresh_token', detail: r.user })
          return issue(r.user, r.clientId)
        }
        return refuse('unsupported_grant_type')
      }
      return new Response('not found', { status: 404 })
    },
  })
  fake.url = `http://127.0.0.1:${server.port}`
  return fake
}
