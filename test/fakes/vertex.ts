// A fake Google Vertex AI endpoint: Gemini generateContent / streamGenerateContent and Anthropic rawPredict / streamRawPredict, behind OAuth Bearer tokens.
//
// After Google's Vertex AI REST reference (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.publishers.models):
// `POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`
// (`:streamGenerateContent?alt=sse` streams) takes the Gemini body; `publishers/anthropic/models/{model}:rawPredict`
// (`:streamRawPredict`) takes Anthropic's Messages body with `anthropic_version: "vertex-2023-10-16"` and
// the model in the URL, not the body. Every call needs `Authorization: Bearer <access token>`; an
// unknown token is 401 UNAUTHENTICATED, a quota refusal 429 RESOURCE_EXHAUSTED (google.rpc.Status).
// The bodies are checked and answered by the Gemini and Anthropic fakes (test/fakes/google.ts, anthropic.ts).

import { anthropic } from './anthropic.ts'
import { isObj, jsonReply, planReply } from './common.ts'
import { google, googleError } from './google.ts'
import type { NativeReply, ProviderImpl, RequestCtx, Validation } from './types.ts'

export interface FakeVertexRequest {
  path: string
  headers: Record<string, string>
  body: unknown
}

export interface FakeVertex {
  url: string
  requests: FakeVertexRequest[]
  /** The next answers are these errors (status and google.rpc.Status), in order. */
  failNext(...statuses: number[]): void
  /** The tokens issued so far are refused from now on (401), as after a revocation. */
  revokeAll(): void
  stop(): Promise<void>
}

const ROUTE = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):(generateContent|streamGenerateContent|predict|rawPredict|streamRawPredict)$/
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/** A rawPredict body: Anthropic's Messages body with Vertex's `anthropic_version`, the model in the URL only; then Anthropic's own checks. */
function validateRawPredict(body: unknown, model: string, streaming: boolean): Validation {
  if (!isObj(body)) return { ok: false, reply: googleError(400, 'Invalid JSON payload received.') }
  const { anthropic_version: version, ...rest } = body
  if (version !== VERTEX_ANTHROPIC_VERSION) return { ok: false, reply: googleError(400, `anthropic_version: expected "${VERTEX_ANTHROPIC_VERSION}", got ${JSON.stringify(version)}`) }
  if ('model' in rest) return { ok: false, reply: googleError(400, 'model: the model is named in the URL, not in the body') }
  if (streaming !== (rest.stream === true)) return { ok: false, reply: googleError(400, `${streaming ? 'streamRawPredict' : 'rawPredict'} and "stream": ${JSON.stringify(rest.stream)} do not agree`) }
  return anthropic.validate({ ...rest, model }, true, {}, { 'anthropic-version': '2023-06-01' })
}

/** A vector of `n` floats made from the text (the same text always embeds the same). */
function vectorOf(text: string, n: number): number[] {
  const seed = [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 11)
  return Array.from({ length: n }, (_, i) => Math.round(Math.cos(seed + i) * 1e6) / 1e6)
}

/**
 * `:predict` of a text embeddings model, after Vertex AI's text embeddings reference: `{instances: [{content, task_type?,
 * title?}], parameters?: {outputDimensionality?, autoTruncate?}}` → `{predictions: [{embeddings: {values, statistics:
 * {token_count, truncated}}}], metadata: {billableCharacterCount}}`; gemini-embedding-001 takes one instance (3072
 * values by default), text-embedding-005 up to 250 (768).
 */
function predict(model: string, body: unknown): NativeReply {
  if (!isObj(body) || !Array.isArray(body.instances) || body.instances.length === 0) return googleError(400, 'Invalid JSON payload received. instances: required')
  const contents = body.instances.map((i) => (isObj(i) && typeof i.content === 'string' ? i.content : undefined))
  if (contents.some((c) => c === undefined)) return googleError(400, 'Invalid JSON payload received. instances[].content: a string is required')
  const gemini = model.startsWith('gemini-embedding')
  if (gemini && contents.length > 1) return googleError(400, `Unable to submit request because ${model} only supports 1 instance per request.`)
  if (contents.length > 250) return googleError(400, 'Unable to submit request because the number of instances exceeds 250.')
  const params = isObj(body.parameters) ? body.parameters : {}
  const size = typeof params.outputDimensionality === 'number' ? params.outputDimensionality : gemini ? 3072 : 768
  const predictions = (contents as string[]).map((c) => ({ embeddings: { values: vectorOf(c, size), statistics: { token_count: c.split(/\s+/).filter(Boolean).length, truncated: false } } }))
  return jsonReply(200, { predictions, metadata: { billableCharacterCount: (contents as string[]).join('').length } })
}

const reply = (r: NativeReply) => new Response(r.body, { status: r.status, headers: r.headers })

function answer(impl: ProviderImpl, ctx: RequestCtx): Response {
  const planned = planReply(impl.id, impl.refusalText, { kind: 'reply' }, ctx)
  if (ctx.stream === false) return reply(impl.complete(planned, ctx))
  const plan = impl.stream(planned, ctx)
  return new Response([...plan.events, plan.end].join(''), { status: 200, headers: plan.headers })
}

/** `tokens()`: the access tokens the token endpoint issued (the only ones accepted). */
export function startFakeVertex(opts: { project: string; location: string; tokens: () => readonly string[] }): FakeVertex {
  const requests: FakeVertexRequest[] = []
  const failures: number[] = []
  const revoked = new Set<string>()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const headers = Object.fromEntries(req.headers)
      const text = await req.text()
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = text
      }
      requests.push({ path: url.pathname + url.search, headers, body })
      const m = ROUTE.exec(url.pathname)
      if (req.method !== 'POST' || !m) return reply(googleError(404, `Method not found: ${req.method} ${url.pathname}`))
      const token = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1]
      if (!token || !opts.tokens().includes(token) || revoked.has(token))
        return reply(googleError(401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.'))
      const [, project, location, publisher, model, method] = m as unknown as [string, string, string, string, string, string]
      if (decodeURIComponent(project) !== opts.project) return reply(googleError(403, `Permission denied on resource project ${project}.`))
      if (decodeURIComponent(location) !== opts.location) return reply(googleError(404, `Location ${location} is not found.`))
      const failure = failures.shift()
      if (failure !== undefined) return reply(googleError(failure, failure === 429 ? 'Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model.' : 'Internal error encountered.'))
      const id = decodeURIComponent(model)

      if (publisher === 'google' && method === 'predict') return reply(predict(id, body))
      if (publisher === 'google') {
        if (method !== 'generateContent' && method !== 'streamGenerateContent') return reply(googleError(400, `${method} is not supported for publisher google.`))
        const streamMode = method === 'generateContent' ? undefined : url.searchParams.get('alt') === 'sse' ? 'sse' : 'json-array'
        const v = google.validate(body, true, { model: id, streamMode }, headers)
        return v.ok ? answer(google, v.ctx) : reply(v.reply)
      }
      if (method !== 'rawPredict' && method !== 'streamRawPredict') return reply(googleError(400, `${method} is not supported for publisher anthropic.`))
      const v = validateRawPredict(body, id, method === 'streamRawPredict')
      return v.ok ? answer(anthropic, v.ctx) : reply(v.reply)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    failNext: (...statuses) => failures.push(...statuses),
    revokeAll: () => {
      for (const t of opts.tokens()) revoked.add(t)
    },
    stop: () => server.stop(true),
  }
}

/**
 * One publisher of the same endpoint as a provider module of the scripted fakes (test/fakes/upstream.ts), for the shared
 * provider matrix (test/conformance): Gemini or Anthropic answers, errors and broken streams on demand, in their own shapes.
 */
export function vertexPublisher(publisher: 'google' | 'anthropic', opts: { project: string; location: string; tokens: () => readonly string[] }): ProviderImpl {
  const base = publisher === 'google' ? google : anthropic
  return {
    ...base,
    basePath: '',
    route(method, url) {
      const m = ROUTE.exec(url.pathname)
      if (method !== 'POST' || !m || m[3] !== publisher) return undefined
      const [, project, location, , model, call] = m as unknown as [string, string, string, string, string, string]
      if (decodeURIComponent(project) !== opts.project || decodeURIComponent(location) !== opts.location) return undefined
      const id = decodeURIComponent(model)
      if (publisher === 'anthropic') return call === 'rawPredict' ? { model: id } : call === 'streamRawPredict' ? { model: id, streamMode: 'sse' } : undefined
      if (call === 'generateContent') return { model: id }
      if (call === 'predict') return { endpoint: 'predict', model: id }
      return call === 'streamGenerateContent' ? { model: id, streamMode: url.searchParams.get('alt') === 'sse' ? 'sse' : 'json-array' } : undefined
    },
    notFound: (method, url) => googleError(404, `Method not found: ${method} ${url.pathname}`),
    authenticate(headers) {
      const token = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1]
      if (token && opts.tokens().includes(token)) return undefined
      return googleError(401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.')
    },
    // `:predict`: the text embeddings models.
    extra: (route, body) => predict(route.model ?? '', body),
    validate: (body, isJson, route, headers) =>
      publisher === 'google' ? google.validate(body, isJson, route, headers) : validateRawPredict(body, route.model ?? '', route.streamMode !== undefined),
  }
}
