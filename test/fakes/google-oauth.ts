// A fake Google OAuth 2.0 token endpoint for service accounts: verifies the RS256 JWT grant and answers as Google does.
//
// From Google's "Using OAuth 2.0 for Server to Server Applications" reference: a form-encoded POST of
// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and `assertion=<JWT>`; the JWT signed RS256 by
// the service account's key, with `iss` (client_email), `scope`, `aud` (the token URI), `iat` and `exp`
// at most one hour apart. Success: `{access_token, expires_in, token_type: "Bearer"}`; refusals: 400
// `{error, error_description}` (`invalid_grant`, `invalid_scope`, `unsupported_grant_type`).

import { type CryptoKey, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from 'jose'

export interface FakeGoogleOAuthOptions {
  clientEmail: string
  /** The public half of the service account's key. */
  publicKey: CryptoKey
  /** The key's id; a grant naming another `kid` is refused. */
  keyId?: string
  expiresIn?: number
  /** The fake's clock (epoch ms), shared with the client's in tests; default Date.now. */
  now?: () => number
  /** Wait before answering, so concurrent callers overlap. */
  delayMs?: number
}

export interface FakeGoogleOAuthGrant {
  status: number
  contentType: string | null
  form: Record<string, string>
  header?: Record<string, unknown>
  claims?: JWTPayload
}

export interface FakeGoogleOAuth {
  /** The token URI to put in the service account key. */
  tokenUri: string
  grants: FakeGoogleOAuthGrant[]
  /** Access tokens issued, in order. */
  issued: string[]
  /** A service account's JSON key (as Google's console gives it) naming this endpoint, for `privateKey`. */
  serviceAccountKey(privateKey: string, projectId: string): Record<string, string>
  stop(): Promise<void>
}

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
const refuse = (error: string, description: string) => Response.json({ error, error_description: description }, { status: 400 })

export function startFakeGoogleOAuth(opts: FakeGoogleOAuthOptions): FakeGoogleOAuth {
  const grants: FakeGoogleOAuthGrant[] = []
  const issued: string[] = []
  const now = opts.now ?? Date.now
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      if (req.method !== 'POST' || url.pathname !== '/token') return Response.json({ error: 'not_found' }, { status: 404 })
      const form = Object.fromEntries(new URLSearchParams(await req.text()))
      const g: FakeGoogleOAuthGrant = { status: 400, contentType: req.headers.get('content-type'), form }
      grants.push(g)
      if (opts.delayMs) await Bun.sleep(opts.delayMs)
      const answer = await judge(form, g)
      g.status = answer.status
      return answer
    },
  })
  const tokenUri = `http://127.0.0.1:${server.port}/token`

  async function judge(form: Record<string, string>, g: FakeGoogleOAuthGrant): Promise<Response> {
    if (!g.contentType?.startsWith('application/x-www-form-urlencoded')) return refuse('invalid_request', 'Invalid Content-Type')
    if (form.grant_type !== JWT_BEARER) return refuse('unsupported_grant_type', `Invalid grant_type: ${form.grant_type ?? ''}`)
    const assertion = form.assertion ?? ''
    try {
      g.header = decodeProtectedHeader(assertion) as Record<string, unknown>
    } catch {
      return refuse('invalid_grant', 'Invalid JWT: the assertion is not a JWT.')
    }
    if (g.header.alg !== 'RS256') return refuse('invalid_grant', 'Invalid JWT Signature.')
    if (opts.keyId !== undefined && g.header.kid !== undefined && g.header.kid !== opts.keyId) return refuse('invalid_grant', 'Invalid JWT Signature.')
    let claims: JWTPayload
    try {
      ;({ payload: claims } = await jwtVerify(assertion, opts.publicKey, { algorithms: ['RS256'], currentDate: new Date(now()) }))
    } catch (err) {
      if (err instanceof errors.JWTExpired) return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.')
      return refuse('invalid_grant', 'Invalid JWT Signature.')
    }
    g.claims = claims
    if (claims.iss !== opts.clientEmail) return refuse('invalid_grant', 'Invalid grant: account not found')
    if (claims.aud !== tokenUri) return refuse('invalid_grant', `Invalid JWT: Failed audience check. The right audience is ${tokenUri}`)
    const nowS = now() / 1000
    const { iat, exp } = claims
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > 3600 || iat > nowS + 300) {
      return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.')
    }
    if (typeof claims.scope !== 'string' || claims.scope === '') return refuse('invalid_scope', 'Invalid OAuth scope or ID token audience provided.')
    const token = `ya29.fake-${issued.length + 1}-${crypto.randomUUID()}`
    issued.push(token)
    return Response.json({ access_token: token, expires_in: opts.expiresIn ?? 3599, token_type: 'Bearer' })
  }

  const serviceAccountKey = (privateKey: string, projectId: string) => ({
    type: 'service_account',
    project_id: projectId,
    private_key_id: opts.keyId ?? 'a1b2c3d4e5f6',
    private_key: privateKey,
    client_email: opts.clientEmail,
    token_uri: tokenUri,
  })
  return { tokenUri, grants, issued, serviceAccountKey, stop: () => server.stop(true) }
}
