// What the pipeline stages share: the dependencies they call and the per-request context they fill in.

import type { OidcVerifier } from '../auth/oidc'
import type { Catalog } from '../catalog/catalog'
import type { Config } from '../config'
import type { FailureKind } from '../providers/adapter'
import type { ChatRequest } from '../providers/openai-types'
import type { ProviderKind } from '../providers/provider-id'
import type { Observer } from '../observability/observer'
import type { RequestTrace } from '../observability/tracer'
import type { ErrorStyle } from '../schemas/api-operation'

/** The GenAI semantic conventions' operation names of gw's endpoints. */
export type GenAiOperation = 'chat' | 'embeddings'
import type { LogPath } from '../store/log-path'
import type { BudgetLedger } from '../policy/budget-ledger'
import type { RateLimiter } from '../policy/rate-limiter'
import type { WaitingAttempts } from './5-attempt'
import type { StreamSlots } from '../policy/stream-slots'
import type { BodyBudget } from '../http/request-context'
import type { KeyScopes, Org, ProviderRecord, RateLimits, Route, SigningSecretRecord } from '../domain/org'
import type { ResponseCacheStore, Store } from '../store/types'
import type { OrgDirectory } from './org-directory'
import type { RecentLatency } from './route-choice'
import type { PolicyView } from './policy-view'
import type { UpstreamHealth } from './upstream-health'

export interface Deps {
  config: Config
  store: Store
  catalog: Catalog
  /** The log path: entries handed to the log thread (src/store/log-path.ts). */
  logs: LogPath
  orgs: OrgDirectory
  health: UpstreamHealth
  /** Injected for tests; defaults to global fetch. */
  fetch: typeof fetch
  limiter: RateLimiter
  /** Open streams per org and per credential. */
  streams: StreamSlots
  /** Bytes of request bodies held by the requests in flight. */
  bodies: BodyBudget
  budgets: BudgetLedger
  /** Recent upstream latency per org and model, for lowest-latency routes. */
  latency: RecentLatency
  oidc: OidcVerifier
  /** Metrics, access log and traces of finished requests. */
  observer: Observer
  /**
   * What shutdown ends once the drain time is up, each with a way to end it early: streams being
   * answered (their error event), MCP sessions.
   */
  inFlight: Set<() => void>
  /** Upstream attempts waiting for their answer: stopped at shutdown (the request then ends with a 503). */
  waiting: WaitingAttempts
  /** The exact response cache (PRODUCT §19): in Redis when GW_REDIS_URL is set, else in the store. */
  cache: ResponseCacheStore
  /** State shared with the other instances over Redis (GW_REDIS_URL); undefined without Redis. */
  shared?: { check(): HealthCheck }
}

/** One line of GET /health. */
export interface HealthCheck {
  status: 'ok' | 'degraded' | 'down' | 'disabled'
  message?: string
}

/** `Admin`: a prompt run from the dashboard's playground, on the admin credential. */
export type AuthMode = 'GwKey' | 'GwSigned' | 'Bearer' | 'Admin'

export interface Identity {
  orgId: string
  authMode: AuthMode
  /** Service key id, or the token's `sub`. */
  subject: string
  /** End-user id carried by a signed token claim, when there is one. */
  endUserId?: string
  /** A service key's own rate limits, when it has any. */
  keyLimits?: RateLimits
  /** A service key's scopes (endpoint paths, model globs), when it has any (PRODUCT §18). */
  scopes?: KeyScopes
}

/** An org as the pipeline needs it: policy and usable provider records. */
export interface OrgContext {
  org: Org
  /** Every key of each provider (enabled or not), by provider id or OpenAI-compatible name. */
  providers: ReadonlyMap<string, readonly ProviderRecord[]>
  /** The org's routes by name (PRODUCT §13). */
  routes: ReadonlyMap<string, Route>
  /** GwSigned secrets, decrypted. */
  signingSecrets: readonly SigningSecretRecord[]
}

export interface ModelRef {
  /** The prefix: a native provider id, or the name of one of the org's OpenAI-compatible providers (PRODUCT §17). */
  provider: string
  /** What the prefix names; an `openai-compatible` one is checked against the org's providers by the policy stage. */
  kind: ProviderKind
  id: string
  /** `provider/model-id` with the canonical provider name. */
  name: string
}

export interface FallbackEntry {
  model: ModelRef
  /** Undefined: fires on every kind but refusal_detected. */
  triggers: FailureKind[] | undefined
}

export interface OutputSchema {
  mode: 'json_object' | 'json_schema'
  schema: Record<string, unknown> | undefined
}

/** A validated chat request with the gateway's own fields separated from what goes upstream. */
export interface ChatInput {
  requestedModel: string
  /** The org's route named by `model`, when it named one; `model` is then the target chosen. */
  route: string | undefined
  model: ModelRef
  /**
   * The OpenAI body minus gateway-only fields (metadata, output_schema, fallback_chain, prompt_id); for an
   * endpoint that sends no conversation (embeddings) only the model, with no messages (`noConversation`).
   */
  body: ChatRequest
  /** What the policy screens, counts and limits, and what the usage estimate reads (never `body` directly). */
  view: PolicyView
  stream: boolean
  metadata: Record<string, string | number | boolean>
  user: string | undefined
  outputSchema: OutputSchema | undefined
  fallbackChain: FallbackEntry[]
  /** `prompt_id` as given by the client (UUID or slug), for log correlation. */
  promptRef: string | undefined
}

/** Prompt identity of a run, or of a chat request linked with `prompt_id`. */
export interface PromptLink {
  id: string | null
  slug: string | null
  version: number | null
}

/** A request body as received: the parsed value, its text and size (for the log). */
export interface RawBody {
  value: unknown
  /** The JSON text, or only the prefix the log's preview keeps when the body is larger than GW_LOG_BODY_MAX_BYTES. */
  text: string
  bytes: number
  /** Gives back the body's bytes in flight (GW_MAX_INFLIGHT_BODY_BYTES) once the log entry is written. */
  release?: () => void
}

/** What is known of a request before its credential is checked. */
export interface RequestContext {
  requestId: string
  /** performance.now() when the request arrived. */
  start: number
  /** When it arrived, epoch ms (the log entry's time). */
  receivedAt: number
  /** HTTP method, for traces. */
  method: string
  /** The endpoint's name in log entries, metrics and traces. */
  endpoint: string
  /** How its errors are shaped (PRODUCT §4, §12). */
  errorStyle: ErrorStyle
  /** The GenAI operation of an endpoint that calls a model (`chat`, `embeddings`), for its trace. */
  operation?: GenAiOperation
  headers: Headers
  /** Aborts when the client goes away. */
  signal: AbortSignal
  /** The request's trace, when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT). */
  trace?: RequestTrace
}

/** A request whose credential has been verified (stage 1): who is calling, for which org. */
export interface AuthedContext extends RequestContext {
  readonly identity: Identity
  readonly org: OrgContext
  prompt?: PromptLink
  /** The request body as received, read only after authentication. */
  rawBody?: RawBody
}
