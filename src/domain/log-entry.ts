// The log entry gw writes once per request, with its attempts, fallback and warnings (PRODUCT §9 reads them back).

import type { FailureClass, FailureKind } from '../providers/adapter'

/**
 * How one attempt ended: answered, failed with a failure kind (PRODUCT §4a), not tried at all, or
 * `cancelled`: the request ended before the upstream answered (the client left, or gw stopped).
 */
export type FailureOutcome = 'ok' | FailureKind | 'skipped' | 'cancelled'

/** Which chain entry answered and the failure kind that made it fire (`x-gw-fallback-*`). */
export interface Fallback {
  used: boolean
  reason: FailureKind | null
  model: string | null
}

/** Something gw changed in the request to fit the model it went to (PRODUCT §4), on the log entry. */
export interface RequestWarning {
  type: 'param_removed' | 'param_clamped' | 'param_relaxed'
  /** The request field concerned (`temperature`, `max_tokens`, …). */
  setting: string
  /** What was done, for people: `clamped 1.5 to 1 for mistral/mistral-small-latest`. */
  detail: string
}

export interface Attempt {
  model: string
  /** The name of the org's provider key used (PRODUCT §13); absent when none was (a skipped entry). */
  key?: string
  outcome: FailureOutcome
  /** Whose failure it was (PRODUCT §4a): `key`, `request` or `provider`; absent on answers and skipped entries. */
  class?: FailureClass
  status: number | null
  latencyMs: number
  message?: string
}

export interface LogEntry {
  requestId: string
  createdAt: string
  orgId: string
  endpoint: string
  authMode: string | null
  subject: string | null
  endUserId: string | null
  user: string | null
  promptId: string | null
  promptSlug: string | null
  promptVersion: number | null
  requestedModel: string | null
  /** The org's route the request named, when it named one (`model` is then the target that answered). */
  route: string | null
  /** The name of the provider key that answered (PRODUCT §13). */
  providerKey: string | null
  model: string | null
  provider: string | null
  stream: boolean
  status: number
  errorCode: string | null
  errorMessage: string | null
  fallback: Fallback
  attempts: Attempt[]
  /** cachedTokens and cacheWriteTokens are parts of promptTokens, reasoningTokens of completionTokens. */
  usage: {
    promptTokens: number
    completionTokens: number
    totalTokens: number
    cachedTokens: number
    cacheWriteTokens: number
    reasoningTokens: number
    estimated: boolean
  }
  /** null when the model's price is unknown (never 0). */
  costUsd: number | null
  /** The catalog's price table version the cost was computed with. */
  priceVersion: string
  latencyMs: number
  upstreamLatencyMs: number | null
  ttftMs: number | null
  /** A streamed answer that ended on an error after content had been sent. */
  incomplete: boolean
  refusal: boolean
  warnings: RequestWarning[]
  metadata: Record<string, string | number | boolean>
  /** Structured-output outcome: did the answer parse as JSON and match the schema. */
  structuredOutput: { parsed: boolean; matchesSchema: boolean | null } | null
  /** The response cache's part, when the org's cache is on (PRODUCT §19): answered from it (`hit`), or not. */
  cache?: 'hit' | 'miss' | 'refresh'
  /** A hit (whose costUsd is 0): what the answer cost when it was first given; null when unknown. */
  costSavedUsd?: number | null
  /** The org's guardrails that acted on the request or its answer (PRODUCT §19). */
  guardrails?: GuardrailRecord[]
  /** A tool call through the MCP gateway (PRODUCT §20): the upstream server and the tool it was asked for. */
  mcp?: { server: string; tool: string }
  /** The id of a Responses answer OpenAI (or Azure) gave, relayed (`resp_…`): previous_response_id on another provider finds the entry by it (PRODUCT §12). */
  responseId?: string
  requestBody?: unknown
  responseBody?: unknown
}

/** What one guardrail did: block, redact, mask; a webhook's allow, deny, rewrite, fail_open or fail_closed. */
export interface GuardrailRecord {
  name: string
  action: string
  /** The kinds of value it found (`email`, …, `regex`); none for a webhook. */
  entities: string[]
}
