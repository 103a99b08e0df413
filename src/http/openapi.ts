// The OpenAPI 3.1 document of gw's HTTP API (PRODUCT §16), made from ApiOperation declarations: their
// TypeBox schemas are JSON Schema 2020-12 already, which OpenAPI 3.1 takes as they are (docs/apis.md).

import type { TSchema } from '@sinclair/typebox'
import type { ApiOperation, Audience, ErrorStyle } from '../schemas/api-operation'
import { AnthropicErrorAnswer, GwErrorAnswer, OpenAiErrorAnswer } from '../schemas/answers'
import { REQUEST_ID_HEADER } from './request-context'

type Json = Record<string, unknown>

export interface ApiInfo {
  title: string
  version: string
  description?: string
}

/** The parameter a route's trailing `*` (the rest of the path, `/` included) is named in the document. */
const WILDCARD_PARAMETER = 'id'

/** `/admin/orgs/:org` → `/admin/orgs/{org}`, with the names of its path parameters. */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = []
  const out = path
    .split('/')
    .map((seg) => {
      const name = seg === '*' ? WILDCARD_PARAMETER : seg.startsWith(':') ? seg.slice(1) : undefined
      if (name === undefined) return seg
      params.push(name)
      return `{${name}}`
    })
    .join('/')
  return { path: out, params }
}

/** Who may call: the schemes of `securitySchemes` below, any one of them. */
const SECURITY: Record<Audience, Json[] | undefined> = {
  client: [{ GwKey: [] }, { GwSigned: [] }, { Bearer: [] }, { ApiKeyHeader: [] }],
  admin: [{ AdminToken: [] }],
  public: undefined,
}

const SECURITY_SCHEMES: Json = {
  GwKey: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      'A service key of an org: `Authorization: GwKey gw_sk_…`. `Authorization: Bearer gw_sk_…` is the same credential (what the OpenAI SDKs send), reported as `x-gw-auth-mode: GwKey`.',
  },
  GwSigned: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: '`Authorization: GwSigned <token>`: an HS256 compact JWS signed with one of the org\'s signing secrets (PRODUCT §8).',
  },
  Bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "An OIDC token from the org's configured issuer (`PUT /admin/orgs/{org}/oidc`)." },
  ApiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'Without an Authorization header, `x-api-key` (how the Anthropic SDKs send a key) is read as a Bearer credential: a gw service key there is a GwKey.',
  },
  AdminToken: {
    type: 'http',
    scheme: 'bearer',
    description: '`Authorization: Bearer $GW_ADMIN_TOKEN` (or a dashboard session cookie, with its CSRF header for changes).',
  },
}

/** Always in the document (titled GwError, OpenAiError, AnthropicError), whichever operations refer to them. */
const ERROR_SCHEMAS = [GwErrorAnswer, OpenAiErrorAnswer, AnthropicErrorAnswer]
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** The error body of each style: gw's shape or OpenAI's on request (PRODUCT §4); OpenAI's always; Anthropic's. */
const ERROR_BODY: Record<ErrorStyle, Json> = {
  gw: { oneOf: [ref('GwError'), ref('OpenAiError')] },
  openai: ref('OpenAiError'),
  anthropic: ref('AnthropicError'),
}

/** The statuses of PRODUCT §5. */
const ERROR_STATUS: Record<number, string> = {
  400: 'The request is invalid (gateway_error, token_limit_exceeded) or an org guardrail refused it (guardrail_blocked)',
  401: 'Missing, malformed, invalid, revoked or expired credential (unauthorized)',
  403: 'The credential may not do this (forbidden, model_not_allowed, policy_violation)',
  404: 'No such resource',
  409: 'It exists already',
  413: 'The body is over its size limit (GW_MAX_BODY_BYTES; 1 MiB on the admin API)',
  429: 'Over a rate limit or budget (rate_limit_exceeded, budget_exceeded); see Retry-After',
  502: 'The providers failed, the fallback chain used up (provider_error)',
  503: 'The store or Redis is unreachable',
  504: 'The provider timed out, the fallback chain used up (provider_error)',
}

/** Which error statuses an operation can answer: by who calls it, and whether it takes a body (client bodies reach providers). */
function errorStatuses(op: ApiOperation, hasPathParams: boolean): number[] {
  if (op.audience === 'public') return []
  const s = [401, 403, 503]
  if (op.body || op.query) s.push(400)
  if (hasPathParams || op.audience === 'client') s.push(404)
  if (op.body) s.push(413)
  if (op.audience === 'admin' && op.method === 'POST' && op.status === 201) s.push(409)
  if (op.audience === 'client') s.push(429)
  if (op.audience === 'client' && op.body) s.push(502, 504)
  return s.sort((a, b) => a - b)
}

/** The JSON of a TypeBox schema (a query's): its symbol keys (TypeBox's own marks) go, as JSON.stringify drops them. */
const plain = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json

/**
 * Shared schemas: a schema with a `title`, wherever it stands, goes under components.schemas once and
 * is referred to; two different schemas with one title are a mistake in the declarations.
 */
class Components {
  readonly schemas: Record<string, Json> = {}
  private readonly seen = new Map<string, unknown>()

  use(schema: TSchema): Json {
    return this.json(schema) as Json
  }

  /** The JSON of a schema, its titled parts as references (TypeBox's symbol keys are not own string keys, so they go). */
  private json(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.json(v))
    if (typeof value !== 'object' || value === null) return value
    const o = value as Record<string, unknown>
    const title = typeof o.title === 'string' && typeof o.type === 'string' ? o.title.replace(/[^A-Za-z0-9._-]/g, '') : ''
    if (title) {
      const known = this.seen.get(title)
      if (known === undefined) {
        this.seen.set(title, value)
        this.schemas[title] = this.copy(o)
      } else if (known !== value && JSON.stringify(known) !== JSON.stringify(value)) throw new Error(`two different schemas are titled "${title}"`)
      return ref(title)
    }
    return this.copy(o)
  }

  private copy(o: Record<string, unknown>): Json {
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, this.json(v)]))
  }
}

const REQUEST_ID_HEADER_DOC = { $ref: '#/components/headers/RequestId' }

/** An answer schema that is a string with a `contentMediaType` (Prometheus text, an HTML page) is sent as that type. */
function answerContent(op: ApiOperation, components: Components): Json | undefined {
  if (!op.answer) return undefined
  const media = op.answer.type === 'string' && typeof op.answer.contentMediaType === 'string' ? op.answer.contentMediaType : 'application/json'
  const content: Json = { [media]: { schema: components.use(op.answer) } }
  if (op.streams)
    content['text/event-stream'] = {
      schema: { type: 'string', description: 'Server-sent events, when the body asks for a stream (`"stream": true`)' },
    }
  return content
}

function operationObject(op: ApiOperation, params: string[], components: Components): Json {
  const parameters: Json[] = params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
  const query = op.query ? plain(op.query) : undefined
  const properties = (query?.properties ?? {}) as Record<string, Json>
  const required = new Set((query?.required ?? []) as string[])
  for (const [name, schema] of Object.entries(properties)) parameters.push({ name, in: 'query', required: required.has(name), schema })

  const status = op.status ?? 200
  const content = status === 204 ? undefined : answerContent(op, components)
  const responses: Json = {
    [status]: {
      description: status === 204 ? 'Done; no body' : op.summary,
      headers: { [REQUEST_ID_HEADER]: REQUEST_ID_HEADER_DOC },
      ...(content ? { content } : {}),
    },
  }
  if (op.alsoAnswers && content)
    responses[op.alsoAnswers.status] = { description: op.alsoAnswers.description, headers: { [REQUEST_ID_HEADER]: REQUEST_ID_HEADER_DOC }, content }
  for (const s of errorStatuses(op, params.length > 0))
    responses[s] = {
      description: ERROR_STATUS[s],
      headers: { [REQUEST_ID_HEADER]: REQUEST_ID_HEADER_DOC },
      content: { 'application/json': { schema: ERROR_BODY[op.errorStyle] } },
    }

  const tag = op.path.split('/').filter((s) => s && s !== 'v1')[0]?.replace(/\..*$/, '') ?? 'gw'
  const security = SECURITY[op.audience]
  const body = op.body ? components.use(op.body) : undefined
  const bodyRequired = Array.isArray(op.body?.required) && op.body.required.length > 0
  return {
    operationId: op.id,
    summary: op.summary,
    tags: [tag],
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: { required: bodyRequired, content: { 'application/json': { schema: body } } } } : {}),
    responses,
    ...(security ? { security } : {}),
  }
}

/** The OpenAPI 3.1 document of `operations` (each `method path` once). */
export function openApiDocument(operations: readonly ApiOperation[], info: ApiInfo): Json {
  const components = new Components()
  for (const schema of ERROR_SCHEMAS) components.use(schema)
  const paths: Record<string, Json> = {}
  const ids = new Set<string>()
  for (const op of operations) {
    if (ids.has(op.id)) throw new Error(`two operations are named "${op.id}"`)
    ids.add(op.id)
    const { path, params } = openApiPath(op.path)
    const item = (paths[path] ??= {})
    const method = op.method.toLowerCase()
    if (item[method]) throw new Error(`${op.method} ${op.path} is declared twice`)
    item[method] = operationObject(op, params, components)
  }
  return {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    paths,
    components: {
      schemas: components.schemas,
      headers: { RequestId: { description: 'The request id: on every answer, errors included; the key of its log entry', schema: { type: 'string' } } },
      securitySchemes: SECURITY_SCHEMES,
    },
  }
}
