// Per-user OAuth to upstream MCP servers (PRODUCT §20): the SDK's OAuth client (discovery, dynamic client
// registration, authorization code + PKCE, refresh) over each end user's tokens, kept sealed in the store.

import { type OAuthClientProvider, auth } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { GatewayError, badRequest } from '../errors'
import type { McpServerRecord } from './records'
import type { McpStore } from './store'

/** How long an authorisation URL stays good. */
const PENDING_MS = 10 * 60_000
/** Authorisations a user may have started and not finished, per server (the newest kept). */
const MAX_PENDING = 5

/** An end user has not authorised gw for an OAuth server yet (or the grant was lost): the URL to visit. */
export class OAuthNeeded extends Error {
  constructor(
    readonly server: string,
    readonly url: string,
  ) {
    super(`Authorise gw to use the MCP server "${server}" for you: open ${url}`)
  }
}

interface Pending {
  /** The nonce carried in `state`. */
  n: string
  /** The PKCE code verifier. */
  v: string
  exp: number
}

/** What the store keeps for one user and server (sealed): the tokens, and the authorisations under way. */
interface UserGrant {
  tokens?: OAuthTokens
  pending?: Pending[]
}

/** `state`: which org, server and user an authorisation is for, and its nonce (the secret part is kept in the store). */
interface State {
  o: string
  s: string
  u: string
  n: string
}

export function encodeState(s: State): string {
  return Buffer.from(JSON.stringify(s)).toString('base64url')
}

export function decodeState(text: string): State {
  try {
    const s = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<State>
    if (typeof s.o === 'string' && typeof s.s === 'string' && typeof s.u === 'string' && typeof s.n === 'string') return s as State
  } catch {}
  throw badRequest('Invalid OAuth state: open the authorisation link gw gave again')
}

/**
 * The SDK's OAuthClientProvider for one end user of one server: gw is the OAuth client, with a client
 * registered by hand (`auth.clientId`) or dynamically (kept per server); the user's tokens are theirs alone.
 */
export class UserOAuth implements OAuthClientProvider {
  private verifier: string | undefined
  /** The access token `tokens()` read last: what a refused refresh was made with (see invalidateCredentials). */
  private readAccess: string | undefined
  /** Set when the SDK asks for the user's authorisation: the URL they must open. */
  authorizationUrl: string | undefined

  constructor(
    private readonly store: McpStore,
    private readonly orgId: string,
    private readonly server: McpServerRecord,
    private readonly endUser: string,
    readonly redirectUrl: string,
    /** For a callback: the verifier of the authorisation it completes. */
    verifier?: string,
  ) {
    this.verifier = verifier
  }

  get clientMetadata(): OAuthClientMetadata {
    const a = this.server.auth.kind === 'oauth' ? this.server.auth : undefined
    return {
      client_name: 'gw MCP gateway',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: a?.clientSecret ? 'client_secret_post' : 'none',
      ...(a?.scope ? { scope: a.scope } : {}),
    }
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const a = this.server.auth
    if (a.kind === 'oauth' && a.clientId) return { client_id: a.clientId, ...(a.clientSecret ? { client_secret: a.clientSecret } : {}) }
    const json = await this.store.getOAuthClient(this.orgId, this.server.name)
    return json ? (JSON.parse(json) as OAuthClientInformationMixed) : undefined
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    // A client registered by hand stays as the operator gave it.
    if (this.server.auth.kind === 'oauth' && this.server.auth.clientId) return
    await this.store.putOAuthClient(this.orgId, this.server.name, JSON.stringify(info))
  }

  private async grant(): Promise<UserGrant> {
    const json = await this.store.getUserTokens(this.orgId, this.server.name, this.endUser)
    return json ? (JSON.parse(json) as UserGrant) : {}
  }

  private async saveGrant(g: UserGrant): Promise<void> {
    await this.store.putUserTokens(this.orgId, this.server.name, this.endUser, JSON.stringify(g))
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    const tokens = (await this.grant()).tokens
    this.readAccess = tokens?.access_token
    return tokens
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    // New tokens end the authorisations under way: their links are spent.
    await this.saveGrant({ tokens })
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no authorisation under way')
    return this.verifier
  }

  state(): string {
    // The nonce goes in when the URL is made (redirectToAuthorization), beside the verifier it stands for.
    return 'pending'
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    const n = crypto.randomUUID()
    const g = await this.grant()
    const now = Date.now()
    const pending = [...(g.pending ?? []).filter((p) => p.exp > now), { n, v: this.codeVerifier(), exp: now + PENDING_MS }].slice(-MAX_PENDING)
    await this.saveGrant({ ...g, pending })
    url.searchParams.set('state', encodeState({ o: this.orgId, s: this.server.name, u: this.endUser, n }))
    this.authorizationUrl = url.href
  }

  /** The verifier of the authorisation `nonce` names, taken (a link works once); undefined when unknown or expired. */
  async takePending(nonce: string): Promise<string | undefined> {
    const g = await this.grant()
    const hit = g.pending?.find((p) => p.n === nonce && p.exp > Date.now())
    if (!hit) return undefined
    await this.saveGrant({ ...g, pending: g.pending?.filter((p) => p !== hit) })
    return hit.v
  }

  /**
   * Forgets what the authorization server no longer accepts: the user's tokens, or the registered client
   * too (registered again next time). Tokens refused for their grant (`tokens`) are forgotten only if they
   * are still the stored ones: another instance refreshing the same grant at the same moment rotated the
   * refresh token this one was refused with, and saved tokens that work; the SDK's retry then uses those
   * (docs/mcp.md, "Per-user OAuth").
   */
  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'tokens') {
      const g = await this.grant()
      const replaced = scope === 'tokens' && g.tokens !== undefined && g.tokens.access_token !== this.readAccess
      if (!replaced) await this.saveGrant({ pending: g.pending })
    }
    const byHand = this.server.auth.kind === 'oauth' && this.server.auth.clientId
    if ((scope === 'all' || scope === 'client') && !byHand) await this.store.putOAuthClient(this.orgId, this.server.name, '')
  }
}

/**
 * GET /mcp/oauth/callback: the user's browser back from the authorization server. The state names the
 * org, server and user; the code is exchanged (with the PKCE verifier kept for that state) for the user's tokens.
 */
export async function completeAuthorization(
  store: McpStore,
  params: URLSearchParams,
  redirectUrl: string,
  fetchFn: typeof fetch,
): Promise<{ orgId: string; server: string; endUser: string }> {
  const state = decodeState(params.get('state') ?? '')
  const denied = params.get('error')
  if (denied) throw new GatewayError(403, 'forbidden', `The authorization server refused: ${denied.slice(0, 64)}`)
  const code = params.get('code')
  if (!code) throw badRequest('The callback carries no authorization code')
  const server = (await store.getServers(state.o)).find((s) => s.name === state.s && s.auth.kind === 'oauth')
  if (!server) throw badRequest('The MCP server of this authorisation no longer exists (or no longer uses OAuth)')
  const provider = new UserOAuth(store, state.o, server, state.u, redirectUrl)
  const verifier = await provider.takePending(state.n)
  if (!verifier) throw badRequest('This authorisation link has expired or was used already: call the tool again for a new one')
  provider.saveCodeVerifier(verifier)
  try {
    await auth(provider, { serverUrl: server.url, authorizationCode: code, fetchFn })
  } catch (err) {
    throw new GatewayError(502, 'provider_error', `The authorization server did not exchange the code: ${err instanceof Error ? err.message.slice(0, 200) : 'error'}`)
  }
  return { orgId: state.o, server: server.name, endUser: state.u }
}
