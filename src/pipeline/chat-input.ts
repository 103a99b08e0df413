// Turns a raw chat-completions body into a validated ChatInput: gateway fields split from the upstream body.

import { badRequest } from '../errors'
import { FAILURE_KINDS, type FailureKind } from '../providers/adapter'
import type { ChatRequest } from '../providers/openai-types'
import { modelName, PROVIDER_IDS, toProviderId } from '../providers/provider-id'
import { checkChatBody, checkFallbackHeader, checkGatewayFields, type ChatBodyT } from '../schemas/chat-body'
import type { ChatInput, FallbackEntry, ModelRef, OutputSchema } from './context'

const GATEWAY_FIELDS = [
  'metadata',
  'output_schema',
  'x-gw-output-schema',
  'prompt_id',
  'x-gw-prompt-id',
  'fallback_chain',
  'x-gw-fallback-chain',
] as const

/** `provider/model-id` → ModelRef; the string is split at the first `/`. */
export function parseModelRef(value: string, field = 'model'): ModelRef {
  const slash = value.indexOf('/')
  const provider = slash > 0 ? toProviderId(value.slice(0, slash)) : undefined
  const id = slash > 0 ? value.slice(slash + 1).trim() : ''
  if (!provider || !id) {
    const why = slash > 0 && !provider ? `unknown provider "${value.slice(0, slash)}"` : 'expected provider/model-name'
    throw badRequest(
      `Invalid ${field} "${value}": ${why} (providers: ${PROVIDER_IDS.join(', ')}; "gemini" is an alias of "google")`,
    )
  }
  return { provider, id, name: modelName(provider, id) }
}

export type Metadata = Record<string, string | number | boolean>

/** Seed limits: ≤ 100 keys, keys ≤ 64 chars, string values ≤ 128 chars, no nested values. */
export function parseMetadata(raw: unknown): Metadata {
  if (raw === undefined) return {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest('Invalid metadata: expected an object of key/value tags')
  const entries = Object.entries(raw)
  if (entries.length > 100) throw badRequest(`Invalid metadata: ${entries.length} keys, at most 100 allowed`)
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > 64) throw badRequest(`Invalid metadata key "${k.slice(0, 80)}": keys are 1 to 64 characters`)
    if (typeof v === 'string') {
      if (v.length > 128) throw badRequest(`Invalid metadata value for "${k}": string values are at most 128 characters`)
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw badRequest(`Invalid metadata value for "${k}": numbers must be finite`)
    } else if (typeof v !== 'boolean') {
      throw badRequest(
        `Invalid metadata value for "${k}": only string, number or boolean values are allowed (no nested objects, arrays or null)`,
      )
    }
  }
  return raw as Metadata
}

function parseOutputSchema(raw: ChatBodyT['output_schema']): OutputSchema | undefined {
  if (!raw) return undefined
  if (raw.mode === 'json_object') return { mode: 'json_object', schema: undefined }
  const { mode: _mode, ...rest } = raw
  return { mode: 'json_schema', schema: { type: 'object', ...rest } }
}

function parseTriggers(raw: string[] | undefined, i: number): FailureKind[] | undefined {
  if (raw === undefined) return undefined
  for (const t of raw)
    if (!(FAILURE_KINDS as readonly string[]).includes(t))
      throw badRequest(`Invalid fallback_chain[${i}].triggers: unknown trigger "${t}" (allowed: ${FAILURE_KINDS.join(', ')})`)
  return raw as FailureKind[]
}

function parseChain(raw: ChatBodyT['fallback_chain']): FallbackEntry[] {
  return (raw ?? []).map((e, i) => ({
    model: parseModelRef(e.model, `fallback_chain[${i}].model`),
    triggers: parseTriggers(e.triggers, i),
  }))
}

/** Role-specific rules TypeBox cannot say: who needs content, tool ids. */
function checkMessages(body: ChatBodyT): void {
  body.messages.forEach((m, i) => {
    const hasContent = m.content !== undefined && m.content !== null
    if (m.role === 'assistant') {
      if (!hasContent && !m.tool_calls?.length)
        throw badRequest(`Invalid field "messages/${i}": an assistant message needs content or tool_calls`)
    } else if (!hasContent) {
      throw badRequest(`Missing required field "messages/${i}/content"`)
    }
    if (m.role === 'tool' && !m.tool_call_id) throw badRequest(`Missing required field "messages/${i}/tool_call_id"`)
  })
}

/** What a function tool, a named tool choice and a json_schema format must carry besides their type. */
function checkToolsAndFormat(body: ChatBodyT): void {
  body.tools?.forEach((tool, i) => {
    if (tool.type === 'function' && !tool.function) throw badRequest(`Missing required field "tools/${i}/function"`)
  })
  const choice = body.tool_choice
  if (typeof choice === 'object' && choice.type === 'function' && !choice.function)
    throw badRequest('Missing required field "tool_choice/function"')
  if (body.response_format?.type === 'json_schema' && !body.response_format.json_schema)
    throw badRequest('Missing required field "response_format/json_schema"')
}

export function parseChatInput(raw: unknown): ChatInput {
  const b = checkChatBody(raw)
  checkMessages(b)
  checkToolsAndFormat(b)
  const model = parseModelRef(b.model)
  const body: Record<string, unknown> = { ...b }
  for (const f of GATEWAY_FIELDS) delete body[f]
  return {
    requestedModel: b.model,
    model,
    body: body as ChatRequest,
    stream: b.stream === true,
    metadata: parseMetadata(b.metadata),
    user: b.user,
    outputSchema: parseOutputSchema(b['x-gw-output-schema'] ?? b.output_schema),
    fallbackChain: parseChain(b['x-gw-fallback-chain'] ?? b.fallback_chain),
    promptRef: b['x-gw-prompt-id'] ?? b.prompt_id,
  }
}

/** gw's own fields (both spellings) a body of another API may carry: taken off before it goes upstream (PRODUCT §12). */
const GATEWAY_BODY_FIELDS = ['prompt_id', 'x-gw-prompt-id', 'fallback_chain', 'x-gw-fallback-chain', 'output_schema', 'x-gw-output-schema']

/** The fallback chain and prompt id of a Messages, Responses or embeddings body, read as chat completions reads them. */
export function gatewayFieldsOf(raw: unknown): Pick<ChatInput, 'fallbackChain' | 'promptRef'> {
  const b = checkGatewayFields(raw)
  return { fallbackChain: parseChain(b['x-gw-fallback-chain'] ?? b.fallback_chain), promptRef: b['x-gw-prompt-id'] ?? b.prompt_id }
}

/** The body without gw's own fields (the object itself when it has none). */
export function withoutGatewayFields(raw: Record<string, unknown>): Record<string, unknown> {
  if (!GATEWAY_BODY_FIELDS.some((f) => f in raw)) return raw
  const out = { ...raw }
  for (const f of GATEWAY_BODY_FIELDS) delete out[f]
  return out
}

function headerJson(headers: Headers, name: string): unknown {
  const raw = headers.get(name)
  if (raw === null) return undefined
  try {
    return JSON.parse(raw)
  } catch {
    throw badRequest(`Invalid ${name} header: expected JSON (${raw.slice(0, 64)})`)
  }
}

/**
 * Gateway fields given as headers, for clients that can only set headers (PRODUCT §12):
 * `x-gw-fallback-chain` (JSON array of `provider/model` strings or `{model, triggers}`),
 * `x-gw-metadata` (JSON object), `x-gw-prompt-id`. A header wins over the body's field.
 */
export function applyGatewayHeaders(input: ChatInput, headers: Headers): ChatInput {
  const chain = headerJson(headers, 'x-gw-fallback-chain')
  if (chain !== undefined) {
    const entries = Array.isArray(chain) ? chain.map((e) => (typeof e === 'string' ? { model: e } : e)) : chain
    input.fallbackChain = parseChain(checkFallbackHeader(entries))
  }
  const metadata = headerJson(headers, 'x-gw-metadata')
  if (metadata !== undefined) input.metadata = parseMetadata(metadata)
  const promptId = headers.get('x-gw-prompt-id')?.trim()
  if (promptId) input.promptRef = promptId
  return input
}
