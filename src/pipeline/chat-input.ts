// Turns a raw chat-completions body into a validated ChatInput: gateway fields split from the upstream body.

import { badRequest, echo, type GatewayError } from '../errors'
import { schemaProblem } from '../json-schema-check'
import { FAILURE_KINDS, type FailureKind } from '../providers/adapter'
import type { ChatRequest } from '../providers/openai-types'
import { isCompatName, modelName, PROVIDER_IDS, type ProviderId, toProviderId } from '../providers/provider-id'
import { checkChatBody, checkGatewayFields, type ChatBodyT, MAX_IDENTIFIER_CHARS } from '../schemas/chat-body'
import { dotted, type FieldPath, fieldError } from '../schemas/problems'
import type { ChatInput, FallbackEntry, ModelRef, OutputSchema } from './context'
import { withConversationView } from './policy-view'
import type { RouteChoice } from './route-choice'

const GATEWAY_FIELDS = [
  'metadata',
  'output_schema',
  'x-gw-output-schema',
  'prompt_id',
  'x-gw-prompt-id',
  'fallback_chain',
  'x-gw-fallback-chain',
] as const

const CONTROL = /[\u0000-\u001f\u007f]/

/** The 400 for a model string whose prefix names no provider (of the org, once it is known). */
export function unknownProvider(value: string, prefix: string | undefined, at: FieldPath): GatewayError {
  const why = prefix !== undefined ? `unknown provider ${echo(prefix)}` : 'expected provider/model-name'
  const problem = `${why} (providers: ${PROVIDER_IDS.join(', ')}, or one of the org's OpenAI-compatible providers; "gemini" is an alias of "google")`
  return fieldError(at, `Invalid ${dotted(at)} ${echo(value)}: ${problem}`, problem)
}

/**
 * `provider/model-id` → ModelRef; the string is split at the first `/`. `at` names the field in the 400
 * (`targets[0].model`). A prefix that is not native but shaped like an OpenAI-compatible provider's
 * name is taken as one (PRODUCT §17); whether the org has it is the policy stage's question.
 */
export function parseModelRef(value: string, at: FieldPath = ['model']): ModelRef {
  const known = parsedRefs.get(value)
  if (known) return known
  const ref = readModelRef(value, at)
  // Bounded: model names come from clients; past the bound the next ones are parsed again.
  if (parsedRefs.size < MAX_PARSED_REFS) parsedRefs.set(value, ref)
  return ref
}

/**
 * Model strings parsed already: most requests name one of a few models, so each gets the same ModelRef
 * (read only), and its `name` is one string whose hash every map keyed by it has computed already.
 */
const parsedRefs = new Map<string, Readonly<ModelRef>>()
const MAX_PARSED_REFS = 1000

function readModelRef(value: string, at: FieldPath): ModelRef {
  // A model name goes into answer headers and log lines: no control characters (CR/LF would split them).
  if (CONTROL.test(value)) throw fieldError(at, `Invalid ${dotted(at)}: control characters are not allowed in a model name`, 'no control characters')
  const slash = value.indexOf('/')
  const prefix = slash > 0 ? value.slice(0, slash) : undefined
  const native = prefix === undefined ? undefined : toProviderId(prefix)
  const provider = native ?? (prefix !== undefined && isCompatName(prefix) ? prefix : undefined)
  const id = slash > 0 ? value.slice(slash + 1).trim() : ''
  if (!provider || !id) throw unknownProvider(value, provider ? undefined : prefix, at)
  return { provider, kind: native ?? 'openai-compatible', id, name: modelName(provider, id) }
}

/** `x-gw-end-user-id` is an identifier like `user`: at most MAX_IDENTIFIER_CHARS. */
export function checkEndUserHeader(headers: Headers): void {
  const v = headers.get('x-gw-end-user-id')
  if (v !== null && v.length > MAX_IDENTIFIER_CHARS)
    throw badRequest(`Invalid header "x-gw-end-user-id": at most ${MAX_IDENTIFIER_CHARS} characters (got ${v.length})`)
}

export type Metadata = Record<string, string | number | boolean>

/** Over `max` characters (code points, as the seed counts them: an emoji is one), counted only when the UTF-16 length is over. */
const longerThan = (s: string, max: number) => s.length > max && (s.length > 2 * max || [...s].length > max)

/** Seed limits: ≤ 100 keys, keys ≤ 64 chars, string values ≤ 128 chars, no nested values. */
export function parseMetadata(raw: unknown): Metadata {
  if (raw === undefined) return {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest('Invalid metadata: expected an object of key/value tags')
  const entries = Object.entries(raw)
  if (entries.length > 100) throw badRequest(`Invalid metadata: ${entries.length} keys, at most 100 allowed`)
  for (const [k, v] of entries) {
    if (k.length === 0 || longerThan(k, 64)) throw badRequest(`Invalid metadata key ${echo(k)}: keys are 1 to 64 characters`)
    if (typeof v === 'string') {
      if (longerThan(v, 128)) throw badRequest(`Invalid metadata value for "${k}": string values are at most 128 characters`)
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
  const schema = { type: 'object', ...rest }
  checkSchemaBounded(schema, 'output_schema')
  return { mode: 'json_schema', schema }
}

/** A schema whose answers the gateway could not check in bounded work is refused up front (400). */
function checkSchemaBounded(schema: Record<string, unknown>, field: string): void {
  const why = schemaProblem(schema)
  if (why) throw badRequest(`Invalid ${field}: the gateway will not check answers against this schema: ${why}`)
}

function parseTriggers(raw: string[] | undefined, i: number, field: string): FailureKind[] | undefined {
  if (raw === undefined) return undefined
  for (const t of raw)
    if (!(FAILURE_KINDS as readonly string[]).includes(t))
      throw fieldError(
        [field, i, 'triggers'],
        `Invalid ${field}[${i}].triggers: unknown trigger ${echo(t)} (allowed: ${FAILURE_KINDS.join(', ')})`,
      )
  return raw as FailureKind[]
}

/** Fallback entries (a request's `fallback_chain`, a route's `fallback`), errors naming `field[i]`. */
export function parseFallbackChain(raw: ChatBodyT['fallback_chain'], field = 'fallback_chain'): FallbackEntry[] {
  return (raw ?? []).map((e, i) => ({
    model: parseModelRef(e.model, [field, i, 'model']),
    triggers: parseTriggers(e.triggers, i, field),
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
  if (body.response_format?.type === 'json_schema') {
    const schema = body.response_format.json_schema?.schema
    if (!body.response_format.json_schema) throw badRequest('Missing required field "response_format/json_schema"')
    if (typeof schema === 'object' && schema !== null && !Array.isArray(schema))
      checkSchemaBounded(schema as Record<string, unknown>, 'response_format/json_schema/schema')
  }
}

/** An org's route by name, resolved to the target chosen for this request (see route-choice.ts). */
export type RouteResolver = (name: string) => RouteChoice | undefined

/** `model` is `provider/model-id`, or the name of one of the org's routes (no "/"). */
export function parseChatInput(raw: unknown, routeOf?: RouteResolver): ChatInput {
  const b = checkChatBody(raw)
  checkMessages(b)
  checkToolsAndFormat(b)
  const body: ChatRequest = { ...b }
  for (const f of GATEWAY_FIELDS) delete body[f]
  return withConversationView({
    requestedModel: b.model,
    ...routingOf(b, b.model, routeOf),
    body,
    stream: b.stream === true,
    metadata: parseMetadata(b.metadata),
    user: b.user,
    outputSchema: parseOutputSchema(b['x-gw-output-schema'] ?? b.output_schema),
  })
}

/** gw's own fields (both spellings) a body of another API may carry: taken off before it goes upstream (PRODUCT §12). */
const GATEWAY_BODY_FIELDS = ['prompt_id', 'x-gw-prompt-id', 'fallback_chain', 'x-gw-fallback-chain', 'output_schema', 'x-gw-output-schema']

/**
 * The model a request names and how it is routed: one of the org's routes (a name without "/"), else
 * `provider/model-id` — or, on the APIs whose bare ids belong to one provider (`bareProvider`), that
 * provider's id — with the fallback chain (the route's first) and the prompt id of the body.
 */
export function routingOf(
  raw: unknown,
  model: string,
  routeOf?: RouteResolver,
  bareProvider?: ProviderId,
): Pick<ChatInput, 'model' | 'route' | 'fallbackChain' | 'promptRef'> {
  const b = checkGatewayFields(raw)
  const routed = model.includes('/') ? undefined : routeOf?.(model)
  const ref = routed?.model ?? parseModelRef(!model.includes('/') && bareProvider ? `${bareProvider}/${model}` : model)
  const chain = parseFallbackChain(b['x-gw-fallback-chain'] ?? b.fallback_chain)
  return {
    model: ref,
    route: routed?.route,
    fallbackChain: routed ? [...routed.fallback, ...chain] : chain,
    promptRef: b['x-gw-prompt-id'] ?? b.prompt_id,
  }
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
    throw badRequest(`Invalid header "${name}": expected JSON (${echo(raw)})`)
  }
}

/**
 * Gateway fields given as headers, for clients that can only set headers (PRODUCT §12), laid over the
 * body: `x-gw-fallback-chain` (a JSON array of `provider/model` strings or `{model, triggers}`) and
 * `x-gw-prompt-id` become the body's `x-gw-` spellings, which win over the plain ones; the body's own
 * checks then name them. A body that is not an object is left for those checks to refuse.
 */
export function withHeaderFields(raw: unknown, headers: Headers): unknown {
  const chain = headerJson(headers, 'x-gw-fallback-chain')
  const promptId = headers.get('x-gw-prompt-id')?.trim()
  if ((chain === undefined && !promptId) || typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw
  const out: Record<string, unknown> = { ...raw }
  if (chain !== undefined) out['x-gw-fallback-chain'] = Array.isArray(chain) ? chain.map((e) => (typeof e === 'string' ? { model: e } : e)) : chain
  if (promptId) out['x-gw-prompt-id'] = promptId
  return out
}

/** `x-gw-metadata` (a JSON object, the body field's limits), when sent; it wins over the body's. */
export function headerMetadata(headers: Headers): Metadata | undefined {
  const metadata = headerJson(headers, 'x-gw-metadata')
  return metadata === undefined ? undefined : parseMetadata(metadata)
}
