// Google Vertex AI as a provider kind (PRODUCT §17, docs/providers.md "Google Vertex AI"): Gemini and Anthropic models on Vertex, spoken with the Google and Anthropic adapters, only the URL and the auth differ.

import { GatewayError } from '../../errors'
import type { ProviderKindSpec, Target, UpstreamFailure, UpstreamRequest } from '../adapter'
import type { ProviderId } from '../provider-id'
import { vertexModelPath } from './embeddings'
import { GRANT_REFUSED, parseServiceAccountKey, ServiceAccountTokenSource, type TokenFetch } from './token-source'

/** The part of a Vertex provider's record native providers do not have (the service-account key is its sealed `apiKey`). */
export interface VertexSettings {
  kind: 'vertex'
  project: string
  location: string
}

/** What an attempt needs to send to Vertex: the provider's name and where the model lives. */
export interface VertexTarget {
  name: string
  project: string
  location: string
  /** The model id as the client named it (`gemini-2.5-flash`, `claude-sonnet-4@20250514`). */
  model: string
}

/** `https://{location}-aiplatform.googleapis.com`, Vertex AI's regional endpoint; the `global` location's has no region. */
export const vertexBaseUrl = (location: string) => (location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`)

/** Anthropic's models on Vertex are `claude…`; every other id is a Gemini (publisher `google`) model. */
export const vertexWire = (modelId: string): ProviderId => (modelId.startsWith('claude') ? 'anthropic' : 'google')

/** The Anthropic version Vertex takes in the body (in place of the `anthropic-version` header). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/**
 * The request an adapter built for the Gemini or Anthropic API, sent to Vertex instead: its URL, a Bearer access
 * token, and for Anthropic the body Vertex takes. A request an adapter addressed to Vertex itself (embeddings'
 * `:predict`) only gets the token.
 */
export function toVertexRequest(req: UpstreamRequest, target: Target, v: VertexTarget, accessToken: string): UpstreamRequest {
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  if (req.url.startsWith(`${target.baseUrl}/v1/projects/`)) return { ...req, headers: { ...req.headers, ...headers } }
  const anthropic = target.provider === 'anthropic'
  const method = anthropic ? (target.stream ? 'streamRawPredict' : 'rawPredict') : target.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
  let body = req.body
  if (anthropic) {
    const { model: _, ...rest } = JSON.parse(req.body) as Record<string, unknown>
    body = JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest })
  }
  // Claude on Vertex reads its beta features from the header, as Anthropic does (a /v1/messages client's, passed on).
  const beta = anthropic ? req.headers['anthropic-beta'] : undefined
  return { url: `${target.baseUrl}${vertexModelPath(v, anthropic ? 'anthropic' : 'google', v.model, method)}`, headers: beta ? { ...headers, 'anthropic-beta': beta } : headers, body }
}

/** Token sources kept per gateway, by service-account key: at most this many (PRODUCT §17; docs/security.md). */
export const MAX_TOKEN_SOURCES = 256

const sources = new WeakMap<object, Map<string, ServiceAccountTokenSource>>()

/** Vertex refused the token (401): the next request asks for a new one (a revoked token is not reused). */
export function forgetVertexToken(owner: object, target: Target): void {
  sources.get(owner)?.get(target.apiKey)?.invalidate()
}

/**
 * An access token for the target's service-account key (its sealed `apiKey`): one token source per key
 * and gateway (`owner`), so the token is fetched once per expiry, not per request. A failure is an
 * upstream failure: a refused grant is the key's (a foreign or revoked key), anything else the provider's.
 */
export async function vertexToken(owner: object, target: Target, fetch: TokenFetch): Promise<{ ok: true; token: string } | { ok: false; failure: UpstreamFailure }> {
  let byKey = sources.get(owner)
  if (!byKey) sources.set(owner, (byKey = new Map()))
  let source = byKey.get(target.apiKey)
  try {
    if (!source) {
      const key = parseServiceAccountKey(JSON.parse(target.apiKey) as unknown)
      if (byKey.size >= MAX_TOKEN_SOURCES) byKey.clear()
      byKey.set(target.apiKey, (source = new ServiceAccountTokenSource({ key, fetch })))
    }
    return { ok: true, token: await source.token() }
  } catch (err) {
    const message = err instanceof GatewayError ? err.message : 'vertex: the service account key could not be read'
    return { ok: false, failure: { kind: 'provider_error', message, ...(message.includes(GRANT_REFUSED) ? { keyRejected: true } : {}) } }
  }
}

/**
 * The `vertex` kind: Gemini models spoken with the Google adapter, Anthropic's with the Anthropic adapter,
 * priced from their catalog sections (Vertex's `claude-sonnet-4@20250514` is `claude-sonnet-4-20250514`);
 * the transport puts the access token on, and the URL and body Vertex takes.
 */
export const vertexKind: ProviderKindSpec = {
  locate: (rec, name, modelId) => {
    const v = rec.vertex as VertexSettings
    return {
      provider: vertexWire(modelId),
      baseUrl: rec.baseUrl ?? vertexBaseUrl(v.location),
      vertex: { name, project: v.project, location: v.location, model: modelId },
    }
  },
  resolve: (catalog, ref) => ({ ...catalog.resolve(vertexWire(ref.id), ref.id.replace('@', '-')), id: ref.id, name: ref.name }),
  genAiName: () => 'gcp.vertex_ai',
  // Gemini's models by their ids, Claude's as Vertex versions them (`claude-haiku-4-5@20251001`).
  catalogIds: (catalog) => [
    ...catalog.list('google').map((m) => m.id),
    ...catalog.list('anthropic').map((m) => m.id.replace(/-(\d{8})$/, '@$1')),
  ],
  // The token is fetched once per expiry and shared by concurrent requests (bounded by the attempt's fetch).
  authorize: async (req, t, env) => {
    if (!t.vertex) return { ok: false, failure: { kind: 'provider_error', message: 'not a Vertex AI provider' } }
    const auth = await vertexToken(env.owner, t, env.fetch)
    return auth.ok ? { ok: true, request: toVertexRequest(req, t, t.vertex, auth.token) } : auth
  },
  unauthorized: (t, env) => forgetVertexToken(env.owner, t),
}
