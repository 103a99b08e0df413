// OpenAI-compatible providers as data (PRODUCT §17): their record's quirks, the presets, and how the
// OpenAI adapter's request is adapted to what such an upstream lacks. One adapter serves them all.

import { isCatalogSection, outsideCatalog } from '../catalog/catalog'
import type { RequestWarning } from '../domain/log-entry'
import type { ProviderRecord } from '../domain/org'
import { badRequest } from '../errors'
import type { ProviderKindSpec, Target, TargetPlace } from './adapter'
import { type AzureSettings, azureEndpoint } from './azure'
import type { ChatMessage, ChatRequest } from './openai-types'
import { textOf } from './content'

/** What an OpenAI-compatible upstream lacks (docs/providers.md, "OpenAI-compatible providers"). */
export interface Quirks {
  /** false: `stream_options.include_usage` is not sent, gw counts the tokens itself (logged as estimated). */
  streamUsage: boolean
  /** false: a request with tools is refused with 400 before it is sent. */
  tools: boolean
  /** `json_schema`: passed on; `json_object`: a schema becomes JSON mode (gw still checks the answer); `none`: refused with 400. */
  jsonSchema: 'json_schema' | 'json_object' | 'none'
  /** The field the upstream reads the output limit from; the other spelling is renamed to it. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens'
  /** `user`: system messages are merged into the first user message. */
  systemRole: 'system' | 'user'
}

export const DEFAULT_QUIRKS: Quirks = { streamUsage: true, tools: true, jsonSchema: 'json_schema', maxTokensField: 'max_tokens', systemRole: 'system' }

/** USD per million tokens for an OpenAI-compatible provider's models. */
export interface CompatPrice {
  input: number
  output: number
}

/** The part of an OpenAI-compatible provider's record that native providers do not have. */
export interface CompatSettings {
  /** `azure`: Azure OpenAI (docs/providers.md "Azure OpenAI"), the OpenAI wire at Azure's URLs with an `api-key` header. */
  kind: 'openai-compatible' | 'azure'
  /** Set when `kind` is `azure`. */
  azure?: AzureSettings
  /** Sent with every request (sealed at rest like the key: they may carry credentials). */
  headers: Record<string, string>
  /** Model ids listed by /v1/models before (or besides) discovery. */
  models: string[]
  quirks: Quirks
  /** 0 for local presets; undefined: unknown (cost null) unless the record gives prices. */
  price: CompatPrice | undefined
}

export interface Preset {
  baseUrl: string
  /** A local server: no key needed, and its answers cost 0. */
  local: boolean
  /** The variable holding its key (`GROQ_API_KEY`). */
  keyEnv: string
  label: string
  quirks?: Partial<Quirks>
}

/** Presets: a provider of this name needs only a key (or nothing); public base URLs from each vendor's docs. */
export const PRESETS = {
  ollama: { baseUrl: 'http://127.0.0.1:11434/v1', local: true, keyEnv: 'OLLAMA_API_KEY', label: 'Ollama', quirks: { streamUsage: false } },
  vllm: { baseUrl: 'http://127.0.0.1:8000/v1', local: true, keyEnv: 'VLLM_API_KEY', label: 'vLLM' },
  llamacpp: { baseUrl: 'http://127.0.0.1:8080/v1', local: true, keyEnv: 'LLAMACPP_API_KEY', label: "llama.cpp's server" },
  lmstudio: { baseUrl: 'http://127.0.0.1:1234/v1', local: true, keyEnv: 'LMSTUDIO_API_KEY', label: 'LM Studio' },
  openrouter: { baseUrl: 'https://openrouter.ai/api/v1', local: false, keyEnv: 'OPENROUTER_API_KEY', label: 'OpenRouter' },
  groq: { baseUrl: 'https://api.groq.com/openai/v1', local: false, keyEnv: 'GROQ_API_KEY', label: 'Groq' },
  deepseek: { baseUrl: 'https://api.deepseek.com/v1', local: false, keyEnv: 'DEEPSEEK_API_KEY', label: 'DeepSeek' },
  xai: { baseUrl: 'https://api.x.ai/v1', local: false, keyEnv: 'XAI_API_KEY', label: 'xAI' },
  together: { baseUrl: 'https://api.together.xyz/v1', local: false, keyEnv: 'TOGETHER_API_KEY', label: 'Together AI' },
  fireworks: { baseUrl: 'https://api.fireworks.ai/inference/v1', local: false, keyEnv: 'FIREWORKS_API_KEY', label: 'Fireworks AI' },
  cerebras: { baseUrl: 'https://api.cerebras.ai/v1', local: false, keyEnv: 'CEREBRAS_API_KEY', label: 'Cerebras' },
} as const satisfies Record<string, Preset>

export type PresetName = keyof typeof PRESETS
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[]

export function presetOf(name: string): Preset | undefined {
  return Object.hasOwn(PRESETS, name) ? PRESETS[name as PresetName] : undefined
}

/** A record's settings, completed: a preset's quirks under the record's own, a local preset's price 0. */
export function compatSettings(name: string, given: { headers?: Record<string, string>; models?: string[]; quirks?: Partial<Quirks>; price?: CompatPrice }): CompatSettings {
  const preset = presetOf(name)
  return {
    kind: 'openai-compatible',
    headers: given.headers ?? {},
    models: given.models ?? [],
    quirks: { ...DEFAULT_QUIRKS, ...preset?.quirks, ...given.quirks },
    price: given.price ?? (preset?.local ? { input: 0, output: 0 } : undefined),
  }
}

/** Why a request cannot go to this provider as it is (a 400 names it), or undefined. */
export function quirkRefusal(req: ChatRequest, name: string, q: Quirks): string | undefined {
  if (!q.tools && (req.tools?.length || req.tool_choice !== undefined || req.messages.some((m) => m.role === 'tool')))
    return `${name} does not take tools (its quirks say "tools": false)`
  const format = req.response_format?.type
  if (q.jsonSchema === 'none' && (format === 'json_schema' || format === 'json_object'))
    return `${name} does not take structured output (its quirks say "jsonSchema": "none")`
  return undefined
}

/** System messages folded into the first user message, for upstreams without a system role. */
function withoutSystemRole(messages: ChatMessage[]): ChatMessage[] {
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer')
  if (!system.length) return messages
  const rest = messages.filter((m) => m.role !== 'system' && m.role !== 'developer')
  const preamble = system.map((m) => textOf(m, 'openai')).join('\n\n')
  const first = rest.findIndex((m) => m.role === 'user')
  if (first < 0) return [{ role: 'user', content: preamble }, ...rest]
  const user = rest[first] as ChatMessage
  const content = typeof user.content === 'string' || user.content == null
    ? `${preamble}\n\n${user.content ?? ''}`
    : [{ type: 'text' as const, text: preamble }, ...user.content]
  return rest.map((m, i) => (i === first ? ({ ...user, content } as ChatMessage) : m))
}

/** The OpenAI request body adapted to the upstream's quirks (after the OpenAI adapter built it). */
export function applyQuirks(body: Record<string, unknown>, q: Quirks, stream: boolean): void {
  const other = q.maxTokensField === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens'
  if (body[other] !== undefined) {
    body[q.maxTokensField] ??= body[other]
    delete body[other]
  }
  if (stream && !q.streamUsage) delete body.stream_options
  if (q.jsonSchema === 'json_object' && isJsonSchema(body.response_format)) body.response_format = { type: 'json_object' }
  if (q.systemRole === 'user') body.messages = withoutSystemRole(body.messages as ChatMessage[])
}

const isJsonSchema = (f: unknown): boolean => typeof f === 'object' && f !== null && (f as { type?: unknown }).type === 'json_schema'

/**
 * The headers of a request in OpenAI's format: JSON, the key as Bearer, and for an OpenAI-compatible
 * provider its own headers (its key left out when it has none: a local server needs none).
 */
export function openAIHeaders(target: Pick<Target, 'apiKey' | 'compat'>): Readonly<Record<string, string>> {
  const known = headerSets.get(target)
  if (known) return known
  const headers: Record<string, string> = { 'content-type': 'application/json', ...target.compat?.headers }
  // Azure takes its key in `api-key`, never as Bearer.
  if (target.compat?.azure) headers['api-key'] = target.apiKey
  else if (target.apiKey || !target.compat) headers.authorization = `Bearer ${target.apiKey}`
  headerSets.set(target, headers)
  return headers
}

/** The URL of an OpenAI API path (`chat/completions`, `embeddings`) for the target, and the `model` its body names (none: leave it out). */
export function openAIEndpoint(target: Pick<Target, 'baseUrl' | 'compat' | 'model'>, path: string): Readonly<{ url: string; model: string | undefined }> {
  let byPath = endpoints.get(target)
  if (!byPath) endpoints.set(target, (byPath = new Map()))
  let e = byPath.get(path)
  if (!e) {
    e = target.compat?.azure ? azureEndpoint(target.baseUrl, target.compat.azure, target.model.id, path) : { url: `${target.baseUrl}/${path}`, model: target.model.id }
    byPath.set(path, e)
  }
  return e
}

/**
 * The headers and URLs of a target, made once: the route stage keeps a target per org context and
 * model, so every request to it reads the same ones (never changed by their readers).
 */
const headerSets = new WeakMap<object, Readonly<Record<string, string>>>()
const endpoints = new WeakMap<object, Map<string, Readonly<{ url: string; model: string | undefined }>>>()

/** Where one of an OpenAI-compatible (or Azure) record's requests go: the OpenAI wire at its base URL, with its headers and quirks. */
export function compatPlace(rec: ProviderRecord, name: string, baseUrl: string): TargetPlace {
  const c = rec.compat as CompatSettings
  return { provider: 'openai', baseUrl: rec.baseUrl ?? baseUrl, compat: { name, headers: c.headers, quirks: c.quirks, ...(c.azure ? { azure: c.azure } : {}) } }
}

/** What the provider lacks is refused, never silently dropped; a schema relaxed to JSON mode is a warning (docs/providers.md). */
export function fitQuirks(body: ChatRequest, t: Target): RequestWarning[] {
  if (!t.compat) return []
  const refusal = quirkRefusal(body, t.compat.name, t.compat.quirks)
  if (refusal) throw badRequest(`${refusal}: send the request to a provider that takes it, or without it`)
  if (t.compat.quirks.jsonSchema === 'json_object' && body.response_format?.type === 'json_schema')
    return [{ type: 'param_relaxed', setting: 'response_format', detail: `response_format json_schema relaxed to json_object for ${t.model.name} (its quirks say "jsonSchema": "json_object")` }]
  return []
}

/** The `openai-compatible` kind (PRODUCT §17): the OpenAI adapter with the record's quirks; priced as its record says. */
export const compatKind: ProviderKindSpec = {
  locate: (rec, name, _modelId, baseUrls) => compatPlace(rec, name, baseUrls.openai),
  resolve: (catalog, ref, rec) => {
    // A provider named as a preset the catalog prices (groq, deepseek, xai) takes its section's entry unless its record sets a price.
    const price = rec?.compat?.price
    if (price || !presetOf(ref.provider) || !isCatalogSection(ref.provider)) return outsideCatalog('openai', ref.name, ref.id, price)
    const m = catalog.resolve(ref.provider, ref.id)
    return { ...m, name: ref.name, known: false }
  },
  genAiName: (t) => t.compat?.name ?? 'openai',
  // A preset the catalog prices (groq, deepseek, xai): its section's models, beside what the upstream lists.
  catalogIds: (catalog, name) => (presetOf(name) && isCatalogSection(name) ? catalog.list(name).map((m) => m.id) : []),
  fit: fitQuirks,
}
