// A fake OIDC provider for the dashboard's single sign-on: discovery, JWKS, an authorize endpoint that signs in
// the user the test names (no form), and a token endpoint that checks the client, the redirect URI, PKCE and
// that each code is used once; ID tokens signed with jose. Faults on request: tampered state, a replayed code,
// another nonce, a key not in the JWKS, an unverified email.

import { createHash } from 'node:crypto'
import type { Server } from 'bun'
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'

export interface FakeOidcUser {
  email: string
  emailVerified: boolean
  name?: string
}

/** What the next authorization does wrong, if anything. */
export type Fault = 'none' | 'tamper-state' | 'replay-code' | 'wrong-nonce' | 'foreign-key' | 'unverified-email'

export interface FakeOidc {
  issuer: string
  clientId: string
  clientSecret: string
  /** Who the next authorization signs in, and how it goes wrong. */
  next: { user: FakeOidcUser; fault: Fault }
  /** Every token request: whether it was accepted, and why not. */
  tokenRequests: { ok: boolean; why?: string }[]
  stop(): Promise<void>
}

interface Grant {
  clientId: string
  redirectUri: string
  challenge: string
  nonce: string
  user: FakeOidcUser
  fault: Fault
  used: boolean
}

export async function startFakeOidc(): Promise<FakeOidc> {
  const kid = 'fake-key-1'
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const foreign = await generateKeyPair('RS256')
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }
  const grants = new Map<string, Grant>()
  let lastCode: string | undefined
  let n = 0
  const tokenRequests: FakeOidc['tokenRequests'] = []
  const fake = { clientId: 'gw-dashboard', clientSecret: 'fake-client-secret-0123456789', next: { user: { email: 'ada@example.com', emailVerified: true }, fault: 'none' as Fault } }
  const refuse = (why: string, status = 400) => {
    tokenRequests.push({ ok: false, why })
    return Response.json({ error: why }, { status })
  }
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req): Promise<Response> {
      const url = new URL(req.url)
      const issuer: string = `http://127.0.0.1:${server.port}`
      if (url.pathname === '/.well-known/openid-configuration')
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
          id_token_signing_alg_values_supported: ['RS256'],
        })
      if (url.pathname === '/jwks') return Response.json({ keys: [jwk] })
      if (url.pathname === '/authorize') {
        const p = url.searchParams
        if (p.get('response_type') !== 'code' || p.get('client_id') !== fake.clientId || p.get('code_challenge_method') !== 'S256' || !p.get('code_challenge') || !p.get('nonce'))
          return new Response('bad authorization request', { status: 400 })
        const { user, fault } = fake.next
        let code = `code-${++n}`
        grants.set(code, { clientId: fake.clientId, redirectUri: p.get('redirect_uri') as string, challenge: p.get('code_challenge') as string, nonce: p.get('nonce') as string, user, fault, used: false })
        // A replayed code: the one this provider already gave (and the client already traded).
        if (fault === 'replay-code' && lastCode) code = lastCode
        else lastCode = code
        const back = new URL(p.get('redirect_uri') as string)
        back.searchParams.set('code', code)
        back.searchParams.set('state', fault === 'tamper-state' ? `${p.get('state')}x` : (p.get('state') as string))
        return Response.redirect(back.toString(), 302)
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        const auth = req.headers.get('authorization') ?? ''
        const [id, secret] = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString().split(':').map(decodeURIComponent)
        if (id !== fake.clientId || secret !== fake.clientSecret) return refuse('invalid_client', 401)
        const form = new URLSearchParams(await req.text())
        const grant = grants.get(form.get('code') ?? '')
        if (form.get('grant_type') !== 'authorization_code' || !grant) return refuse('invalid_grant')
        if (grant.used) return refuse('invalid_grant')
        grant.used = true
        if (form.get('redirect_uri') !== grant.redirectUri) return refuse('invalid_grant')
        const verifier = form.get('code_verifier') ?? ''
        if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) return refuse('invalid_grant')
        tokenRequests.push({ ok: true })
        const idToken = await new SignJWT({
          email: grant.user.email,
          email_verified: grant.fault === 'unverified-email' ? false : grant.user.emailVerified,
          ...(grant.user.name ? { name: grant.user.name } : {}),
          nonce: grant.fault === 'wrong-nonce' ? 'another-nonce' : grant.nonce,
        })
          .setProtectedHeader({ alg: 'RS256', kid })
          .setIssuer(issuer)
          .setAudience(grant.clientId)
          .setSubject(`sub-${grant.user.email}`)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(grant.fault === 'foreign-key' ? foreign.privateKey : privateKey)
        return Response.json({ access_token: 'fake-access-token', token_type: 'Bearer', expires_in: 300, id_token: idToken })
      }
      return new Response('not found', { status: 404 })
    },
  })
  return Object.assign(fake, {
    issuer: `http://127.0.0.1:${server.port}`,
    tokenRequests,
    async stop() {
      await server.stop(true)
    },
  })
}
