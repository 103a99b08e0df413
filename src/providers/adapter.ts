// The contract every provider adapter implements: a pure translator between OpenAI chat and one native API.

import type { Catalog, ResolvedModel } from '../catalog/catalog'
import type { RequestWarning } from '../domain/log-entry'
import type { ProviderRecord } from '../domain/org'
import type { RelayReader } from '../apis/relay-transcript'
import type { SseEvent } from '../sse/parse'
import type { ChatRequest, Choice, ChunkChoice, Usage } from './openai-types'
import type { AzureSettings } from './azure'
import type { BedrockAuth } from './bedrock/request'
import type { Quirks } from './openai-compatible'
import type { ProviderId, Wire } from './provider-id'
import type { VertexTarget } from './vertex/vertex'

/** Why an upstream attempt did not produce a usable answer (PRODUCT §4a). */
export type FailureKind = 'rate_limit' | 'provider_error' | 'timeout' | 'context_limit' | 'refusal_detected'
export const FAILURE_KINDS: readonly FailureKind[] = [
  'rate_limit',
  'provider_error',
  'timeout',
  'context_limit',
  'refusal_detected',
]

/**
 * Whose failure it is (PRODUCT §4a), which decides what is remembered: a *key* failure (upstream
 * 401/403, a rate limit) benches that key and the request moves to another key at once; a *request*
 * failure (400/404/409/413/422, a prompt too long for the model) is the caller's and is never counted;
 * a *provider* failure (5xx, 529, timeouts, connection errors, stalls, malformed answers, anything
 * else) counts toward the breaker. Key health, the breaker, the answer and the log all ask `failureClass`.
 */
export type FailureClass = 'key' | 'request' | 'provider'

const KEY_STATUSES: ReadonlySet<number> = new Set([401, 403])
const REQUEST_STATUSES: ReadonlySet<number> = new Set([400, 404, 409, 413, 422])

export function failureClass(f: { kind: FailureKind; status?: number | null; keyRejected?: boolean }): FailureClass {
  if (f.kind === 'rate_limit' || f.keyRejected || (f.status != null && KEY_STATUSES.has(f.status))) return 'key'
  if (f.kind === 'context_limit' || f.kind === 'refusal_detected') return 'request'
  if (f.kind === 'provider_error' && f.status != null && REQUEST_STATUSES.has(f.status)) return 'request'
  return 'provider'
}

export interface UpstreamFailure {
  kind: FailureKind
  /** Upstream HTTP status, when the upstream answered at all. */
  status?: number
  /** The upstream's own explanation (never contains our credentials). */
  message: string
  retryAfterMs?: number
  /** The upstream said the key itself is wrong where its status does not (Gemini's 400 `API_KEY_INVALID`). */
  keyRejected?: boolean
}

/**
 * How a provider is reached (PRODUCT §17, docs/providers.md "Provider kinds"): one of the four as it is,
 * or one of the org's providers of a kind; each kind is an entry of the registry (src/providers/registry.ts).
 */
export type TargetKind = 'native' | 'openai-compatible' | 'azure' | 'bedrock' | 'vertex'

/** Where and how one attempt is sent: resolved by the route stage. */
export interface Target {
  /** The native API spoken, which picks the adapter (Bedrock's Converse, or one of the four's). */
  provider: Wire
  /** The provider's kind: what it adds to its wire's adapter (URLs, credentials, quirks). */
  kind: TargetKind
  model: ResolvedModel
  baseUrl: string
  apiKey: string
  /** Which of the org's keys for this provider `apiKey` is (PRODUCT §13); `default` for the single key. */
  keyName: string
  /** When that key's record last changed: a key benched after a 401/403 comes back when it does. */
  keyRevision: string
  stream: boolean
  /** The org's policy says `promptCaching: "auto"`: Anthropic models get cache breakpoints on long stable prefixes (PRODUCT §19). */
  promptCaching?: boolean
  /** Set when the provider is one of the org's OpenAI-compatible ones or Azure (`provider` is then `openai`, the adapter spoken). */
  compat?: CompatTarget
  /** Set when the provider is one of the org's Vertex AI ones (`provider` is then `google` or `anthropic`, the adapter spoken; `apiKey` the service-account key). */
  vertex?: VertexTarget
  /** Set when the provider is one of the org's Bedrock ones (PRODUCT §17; `provider` is then `bedrock`). */
  bedrock?: BedrockTarget
}

/** The provider's name as logs, errors and spans show it: the org's own name for it, else the native id. */
export const providerName = (t: Target): string => t.compat?.name ?? t.vertex?.name ?? t.bedrock?.name ?? t.provider

/** What the bedrock adapter needs: the provider's name, its region and credentials (the model id is the request's). */
export interface BedrockTarget {
  name: string
  region: string
  auth: BedrockAuth
}

/** What the OpenAI adapter needs to speak to an OpenAI-compatible provider (PRODUCT §17). */
export interface CompatTarget {
  /** The provider's name (the model prefix). */
  name: string
  headers: Record<string, string>
  quirks: Quirks
  /** Azure OpenAI: its URL form and deployments (the key then goes in `api-key`). */
  azure?: AzureSettings
}

export interface UpstreamRequest {
  url: string
  headers: Record<string, string>
  body: string
}

/** A non-streamed answer, already in OpenAI terms; the normalise stage adds id/created/model. */
export interface UpstreamCompletion {
  id?: string
  model?: string
  choices: Choice[]
  usage?: Usage
  /** Provider fields worth passing on unchanged (e.g. `system_fingerprint`). */
  extra?: Record<string, unknown>
  /** The provider's own answer, for endpoints that relay it as it came (pass-through, embeddings). */
  native?: unknown
}

/** What a stream translator yields for each upstream event. */
export type StreamPart =
  | { type: 'meta'; id?: string; model?: string; created?: number }
  | { type: 'choices'; choices: ChunkChoice[] }
  | { type: 'usage'; usage: Usage }
  | { type: 'failure'; failure: UpstreamFailure }
  /** The upstream's own end-of-stream signal arrived: the answer is complete. */
  | { type: 'end' }
  /**
   * One upstream event as it came (pass-through endpoints): its SSE text, or '' when its bytes travel
   * in a `bytes` part (the event is then only named, for the encoder to know what passed).
   */
  | { type: 'relay'; event: string | undefined; text: string }
  /**
   * Upstream bytes relayed as received, whole events only (src/apis/raw-relay.ts), or chat chunks passed
   * on with their model renamed (OpenAIStyleStream.passBytes); `content`: they hold the answer's text
   * (such chunks hold nothing else), so they commit the stream.
   */
  | { type: 'bytes'; bytes: Uint8Array; content?: true }

/** A part that commits a stream: the answer's first content (text, a refusal, a tool call or a finish). */
export function isContent(p: StreamPart): boolean {
  if (p.type === 'bytes') return p.content === true
  return (
    p.type === 'choices' &&
    p.choices.some((c) => !!c.delta.content || !!c.delta.refusal || !!c.delta.tool_calls?.length || c.finish_reason !== null)
  )
}

/** Turns a streamed answer's bytes into events for the translator (SseDecoder unless the adapter has its own). */
export interface StreamDecoder {
  push(chunk: Uint8Array): SseEvent[]
  end(): SseEvent[]
  /** Why decoding stopped (an event over the bounds), if it did. */
  readonly tooLarge: string | undefined
}

export interface StreamTranslator {
  /**
   * True while the upstream's bytes go to the client as received (the attempt cuts them at event
   * boundaries into `bytes` parts); the translator then names each event with an empty `relay` part.
   * Turned off for good when the stream is framed in a way the byte scan does not follow (a CR).
   */
  relaysBytes?: boolean
  /**
   * True while the attempt hands it the upstream's whole events as bytes (`passBytes`) instead of
   * decoded events: set where the client reads the upstream's own chunks (chat completions from an
   * OpenAI-style provider, src/apis/chat/chunk-pass.ts); turned off for good by a framing the byte scan
   * does not follow (a CR) or an event longer than it holds.
   */
  passesBytes?: boolean
  /** Parts for whole events as bytes: those it can pass on (renamed where needed) in `bytes` parts, the others read. */
  passBytes?(events: Uint8Array): StreamPart[]
  /** A pass-through stream's reader (RawRelay, chunks passed as bytes): its events reach the log as the text the client received. */
  readonly reader?: RelayReader
  push(event: SseEvent): StreamPart[]
  /** The upstream body closed. Protocols without an end marker (Gemini) report `end` here when complete. */
  end(): StreamPart[]
}

/**
 * What a client asked of the model's thinking beyond `reasoning_effort` (the Messages API's
 * `thinking`): an exact budget in tokens where the provider takes one, and whether the thinking text
 * is wanted back (as `reasoning_content` on the answer and its deltas). Chat completions never sets it.
 */
export interface ThinkingOptions {
  budgetTokens?: number
  showThinking: boolean
}

export interface ProviderCapabilities {
  /** The provider refuses requests without an output limit (Anthropic). */
  requiresMaxTokens: boolean
  /** Highest temperature the provider takes; higher values are clamped. */
  temperatureMax: number
  /** The most stop sequences the provider takes (OpenAI 4, Gemini 5); the first ones are kept. */
  maxStopSequences?: number
}

export interface ProviderAdapter {
  readonly id: Wire
  readonly capabilities: ProviderCapabilities
  /** May throw a GatewayError (400) for input the provider cannot take at all (e.g. an audio part). */
  buildRequest(req: ChatRequest, target: Target): UpstreamRequest
  /**
   * `req` is the request buildRequest was given, for answers that depend on how it was sent
   * (structured output through a forced tool). Throws (a plain Error) on an answer that is not
   * the provider's documented shape.
   */
  parseResponse(json: unknown, target: Target, req: ChatRequest): UpstreamCompletion
  createStream(target: Target, req: ChatRequest): StreamTranslator
  parseError(status: number, bodyText: string, headers: Headers): UpstreamFailure
  /** A stream that is not SSE (Bedrock's event stream): its content type and its decoder. */
  streamFraming?: { contentType: string; decoder(): StreamDecoder }
}

/** The part of a target its provider's kind decides from one of the org's records. */
export type TargetPlace = Pick<Target, 'provider' | 'baseUrl' | 'compat' | 'vertex' | 'bedrock'>

/** What the transport of an attempt lends a kind's `authorize`: the gateway that owns cached tokens, and a fetch bounded by the attempt. */
export interface TransportEnv {
  owner: object
  fetch(url: string, init: RequestInit): Promise<Response>
}

export type Authorized = { ok: true; request: UpstreamRequest } | { ok: false; failure: UpstreamFailure }

/**
 * A provider kind (src/providers/registry.ts): what it adds to the adapter of its wire, which stays a
 * pure translator. The stages ask the target's kind and never branch on it themselves.
 */
export interface ProviderKindSpec {
  /** The target fields of one of the org's records of this kind, for a model of the provider `name`. */
  locate(rec: ProviderRecord, name: string, modelId: string, baseUrls: Readonly<Record<ProviderId, string>>): TargetPlace
  /** The model's catalog entry (limits, price) for a provider of this kind; `rec` is one of its records when the org has one. */
  resolve(catalog: Catalog, ref: { provider: string; id: string; name: string }, rec: ProviderRecord | undefined): ResolvedModel
  /** gen_ai.provider.name of an attempt (GenAI conventions). */
  genAiName(t: Target): string
  /** The model ids (as the provider names them) the catalog lists for a provider of this kind named `name`, for /v1/models. */
  catalogIds?(catalog: Catalog, name: string): string[]
  /** Before the request is built: throws a GatewayError (400) for what the provider cannot take; warns of what is relaxed. */
  fit?(req: ChatRequest, t: Target): RequestWarning[]
  /**
   * Transport: the credentials a built request carries when they are more than a key in a header (a
   * SigV4 signature made per attempt, an OAuth access token fetched once per expiry, the URL and body
   * the cloud takes). A failure to get them is the attempt's failure.
   */
  authorize?(req: UpstreamRequest, t: Target, env: TransportEnv): Promise<Authorized>
  /** The upstream answered 401: whatever `authorize` cached for this target is dropped. */
  unauthorized?(t: Target, env: TransportEnv): void
}
