// TypeBox schemas of what the admin API (PRODUCT §6), /health, /v1/models and the logs API answer: the
// OpenAPI document's answer schemas. Open where the store's records carry more than is named here.

import { type TSchema, Type as t } from '@sinclair/typebox'
import { PROMETHEUS_CONTENT_TYPE } from '../observability/metric-registry'
import { PolicyBody } from './admin-bodies'

const open = { additionalProperties: true }
const nullable = <S extends TSchema>(s: S) => t.Union([s, t.Null()])
const time = t.String({ description: 'ISO 8601 time' })

/** An object whose fields the document does not name (the store's records as they are). */
export const AnyObject = t.Object({}, open)

/** `{data: [...]}`, how the admin API lists things. */
export const ListOf = <S extends TSchema>(item: S, title: string) => t.Object({ data: t.Array(item) }, { ...open, title })

export const OrgSummary = t.Object({ id: t.String(), name: t.String(), createdAt: t.Optional(time) }, { ...open, title: 'OrgSummary' })

export const ProviderKey = t.Object(
  {
    provider: t.String(),
    name: t.String(),
    apiKey: t.String({ description: 'masked' }),
    baseUrl: nullable(t.String()),
    enabled: t.Boolean(),
    weight: t.Number(),
    updatedAt: time,
  },
  { ...open, title: 'ProviderKey' },
)

export const RouteAnswer = t.Object(
  {
    name: t.String(),
    targets: t.Array(t.Object({ model: t.String(), weight: t.Number() }, open)),
    strategy: t.String(),
    fallback: t.Array(t.Unknown()),
    updatedAt: time,
  },
  { ...open, title: 'Route' },
)

const ServiceKeyInfo = t.Object({ id: t.String(), name: t.Optional(nullable(t.String())) }, { ...open, title: 'ServiceKeyInfo' })
const SigningSecretInfo = t.Object({ kid: t.String() }, { ...open, title: 'SigningSecretInfo' })
export const OidcAnswer = t.Object({ issuer: t.String(), audience: t.String() }, { ...open, title: 'Oidc' })

export const OrgAnswer = t.Object(
  {
    id: t.String(),
    name: t.String(),
    createdAt: time,
    policy: PolicyBody,
    providers: t.Array(ProviderKey),
    routes: t.Array(RouteAnswer),
    serviceKeys: t.Array(ServiceKeyInfo),
    signingSecrets: t.Array(SigningSecretInfo),
    oidc: nullable(OidcAnswer),
  },
  { ...open, title: 'Org' },
)

export const CreatedOrg = t.Object({ id: t.String(), name: t.String() }, { title: 'CreatedOrg' })
export const CreatedServiceKey = t.Object({ id: t.String(), key: t.String({ description: 'shown only here' }) }, { title: 'CreatedServiceKey' })
export const CreatedSigningSecret = t.Object({ kid: t.String(), secret: t.String({ description: 'shown only here' }) }, { title: 'CreatedSigningSecret' })
export const CreatedPrompt = t.Object({ id: t.String({ description: 'a UUID' }), slug: t.String() }, { title: 'CreatedPrompt' })
export const CreatedPromptVersion = t.Object(
  { version: t.Integer(), published: t.Boolean(), warning: t.Optional(t.String()) },
  { title: 'CreatedPromptVersion' },
)
export const PublishedPrompt = t.Object({ id: t.String(), slug: t.String(), publishedVersion: t.Integer() }, { title: 'PublishedPrompt' })
export const PromptAnswer = t.Object({ id: t.String(), slug: t.String() }, { ...open, title: 'Prompt' })
export const PartialAnswer = t.Object({ name: t.String(), template: t.String() }, { title: 'PromptPartial' })

/** One request's log entry (PRODUCT §9); src/store/types.ts has all of its fields. */
export const LogEntryAnswer = t.Object(
  {
    requestId: t.String(),
    createdAt: time,
    orgId: t.String(),
    endpoint: t.String(),
    model: nullable(t.String()),
    provider: nullable(t.String()),
    status: t.Integer(),
    errorCode: nullable(t.String()),
    costUsd: nullable(t.Number()),
    usage: t.Object({ promptTokens: t.Integer(), completionTokens: t.Integer(), totalTokens: t.Integer() }, open),
    latencyMs: t.Number(),
    mcp: t.Optional(t.Object({ server: t.String(), tool: t.String() }, { description: 'an MCP tool call through /mcp (PRODUCT §20)' })),
  },
  { ...open, title: 'LogEntry' },
)
export const LogPage = t.Object({ data: t.Array(LogEntryAnswer), nextCursor: nullable(t.String()) }, { ...open, title: 'LogPage' })
export const UsageReport = ListOf(AnyObject, 'UsageReport')
export const StatsAnswer = t.Object({ since: t.String(), until: t.String(), bucketMs: t.Number() }, { ...open, title: 'Stats' })

/** The query of GET /v1/logs and /admin/orgs/{org}/logs (PRODUCT §9). */
export const LogQuery = t.Object({
  metadata: t.Optional(t.Array(t.String({ description: 'key=value' }), { description: 'ANDed' })),
  model: t.Optional(t.String()),
  provider: t.Optional(t.String()),
  status: t.Optional(t.String()),
  user: t.Optional(t.String()),
  since: t.Optional(t.String()),
  until: t.Optional(t.String()),
  limit: t.Optional(t.String()),
  cursor: t.Optional(t.String()),
})

/** The query of the usage reports (PRODUCT §11). */
export const UsageQuery = t.Object({
  since: t.Optional(t.String()),
  until: t.Optional(t.String()),
  groupBy: t.Optional(t.String({ description: 'day by default' })),
})

/** The query of GET /admin/orgs/{org}/stats (the dashboard's charts). */
export const StatsQuery = t.Object({
  since: t.Optional(t.String()),
  until: t.Optional(t.String()),
  buckets: t.Optional(t.String({ description: '48 by default' })),
  by: t.Optional(t.String({ description: 'model by default' })),
})

const Check = t.Object({ status: t.String({ description: 'ok, degraded, down or disabled' }), message: t.Optional(t.String()) }, open)

/** GET /health, /health/live and /health/ready (503 with the same body when down). */
export const HealthAnswer = t.Object(
  { ok: t.Boolean(), status: t.String({ description: 'ok, degraded or down' }), checks: t.Optional(t.Record(t.String(), Check)), requestId: t.String() },
  { ...open, title: 'Health' },
)

const ModelEntry = t.Object(
  { id: t.String(), object: t.Literal('model'), created: t.Integer(), owned_by: t.String(), endpoints: t.Array(t.String()) },
  { ...open, title: 'Model' },
)
export const ModelAnswer = ModelEntry
export const ModelList = t.Object({ object: t.Literal('list'), data: t.Array(ModelEntry) }, { title: 'ModelList' })

/** GET /metrics: the Prometheus text exposition. */
export const MetricsAnswer = t.String({ contentMediaType: PROMETHEUS_CONTENT_TYPE })
