// TypeBox schema of the chat-completions body: the envelope gw validates; everything else passes through.

import { type Static, type TObject, type TProperties, Type as t } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { badRequest } from '../errors'
import { MAX_PROBLEMS, MISSING, type Problem, problemMessage } from './problems'

const open = { additionalProperties: true }

/** An object schema that lets other properties through, and whose type says so (`[key: string]: unknown` besides its own). */
export type TOpen<T extends TProperties> = TObject<T> & { static: Static<TObject<T>> & { [key: string]: unknown } }
export const Open = <T extends TProperties>(properties: T): TOpen<T> => t.Object(properties, open) as TOpen<T>

/** `model`, `user`, `x-gw-end-user-id` and prompt references are at most this long (PRODUCT §4). */
export const MAX_IDENTIFIER_CHARS = 256
export const Identifier = (opts: { minLength?: number } = {}) => t.String({ ...opts, maxLength: MAX_IDENTIFIER_CHARS })

const ContentPart = Open({ type: t.String() })

const Role = t.Union([t.Literal('system'), t.Literal('developer'), t.Literal('user'), t.Literal('assistant'), t.Literal('tool')])
const Message = Open({
  role: Role,
  content: t.Optional(t.Union([t.String(), t.Null(), t.Array(ContentPart)])),
  tool_calls: t.Optional(t.Array(Open({ id: t.String(), function: Open({ name: t.String(), arguments: t.Optional(t.String()) }) }))),
  tool_call_id: t.Optional(t.String()),
})

export const OutputSchemaBody = Open({
  mode: t.Union([t.Literal('json_object'), t.Literal('json_schema')]),
  type: t.Optional(t.String()),
  properties: t.Optional(t.Record(t.String(), t.Unknown())),
  required: t.Optional(t.Array(t.String())),
})

// The OpenAI fields the adapters translate: their types are checked here, so a wrong one is a 400
// naming the field instead of a crash in a translator. Anything else passes through unchecked.
const Tool = Open({
  type: t.String(),
  function: t.Optional(Open({ name: t.String(), description: t.Optional(t.String()), parameters: t.Optional(Open({})) })),
})
const ToolChoice = t.Union([
  t.Literal('none'),
  t.Literal('auto'),
  t.Literal('required'),
  Open({ type: t.String(), function: t.Optional(Open({ name: t.String() })) }),
])
const ResponseFormat = Open({
  type: t.String(),
  json_schema: t.Optional(Open({ name: t.Optional(t.String()), schema: t.Optional(Open({})), strict: t.Optional(t.Boolean()) })),
})

export const FallbackEntryBody = Open({ model: Identifier(), triggers: t.Optional(t.Array(t.String())) })

/**
 * The OpenAI chat-completions request: what goes upstream once gw's own fields are taken off
 * (`ChatRequest`, src/providers/openai-types.ts, is its type). Unknown fields pass through unchanged.
 */
export const ChatRequestBody = Open({
  model: Identifier(),
  messages: t.Array(Message, { minItems: 1 }),
  max_tokens: t.Optional(t.Integer({ minimum: 1 })),
  max_completion_tokens: t.Optional(t.Integer({ minimum: 1 })),
  temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })),
  top_p: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
  stream: t.Optional(t.Boolean()),
  stream_options: t.Optional(Open({ include_usage: t.Optional(t.Boolean()) })),
  stop: t.Optional(t.Union([t.String(), t.Array(t.String())])),
  seed: t.Optional(t.Integer()),
  tools: t.Optional(t.Array(Tool)),
  tool_choice: t.Optional(ToolChoice),
  parallel_tool_calls: t.Optional(t.Boolean()),
  response_format: t.Optional(ResponseFormat),
  user: t.Optional(Identifier()),
})

/** The chat-completions body a client sends: the OpenAI request and gw's own fields (both spellings). */
export const ChatBody = Open({
  ...ChatRequestBody.properties,
  metadata: t.Optional(t.Record(t.String(), t.Unknown())),
  output_schema: t.Optional(OutputSchemaBody),
  'x-gw-output-schema': t.Optional(OutputSchemaBody),
  prompt_id: t.Optional(Identifier({ minLength: 1 })),
  'x-gw-prompt-id': t.Optional(Identifier({ minLength: 1 })),
  fallback_chain: t.Optional(t.Array(FallbackEntryBody, { maxItems: 10 })),
  'x-gw-fallback-chain': t.Optional(t.Array(FallbackEntryBody, { maxItems: 10 })),
})
export type ChatBodyT = Static<typeof ChatBody>

export interface Validator<T> {
  /** Returns the value typed, or throws 400 gateway_error naming the first offending field (its `problems` listing them). */
  (value: unknown): T
  /** What is wrong with the value, field by field (at most MAX_PROBLEMS, one per field); empty when it is valid. */
  problems(value: unknown): Problem[]
}

/** `one of "a", "b"` for a union of strings; `"none" or an object`, `a string or an array` otherwise. */
type UnionMember = { const?: unknown; type?: string; minItems?: number }

function describeUnion(members: UnionMember[]): string {
  if (members.every((m) => typeof m.const === 'string')) return `one of ${members.map((m) => `"${m.const}"`).join(', ')}`
  const kind = (m: UnionMember) =>
    m.const !== undefined
      ? JSON.stringify(m.const)
      : m.type === 'array'
        ? m.minItems ? 'a non-empty array' : 'an array'
        : m.type === 'object' ? 'an object' : `a ${m.type}`
  // Arrays of several item types read as one kind ("a string or a non-empty array").
  return [...new Set(members.map(kind))].join(' or ')
}

const NOT_AN_OBJECT: Problem = { field: '', message: 'expected a JSON object' }

/** Compiles a schema into a validator whose problems read like `{ field: "/messages/0/role", message: "expected one of …" }`. */
export function validator<S extends Parameters<typeof TypeCompiler.Compile>[0]>(schema: S): Validator<Static<S>> {
  const compiled = TypeCompiler.Compile(schema)
  const problems = (value: unknown): Problem[] => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [NOT_AN_OBJECT]
    if (compiled.Check(value)) return []
    const out: Problem[] = []
    for (const e of compiled.Errors(value)) {
      if (out.some((p) => p.field === e.path)) continue
      const members = e.schema.anyOf as UnionMember[] | undefined
      out.push({ field: e.path, message: e.value === undefined ? MISSING : members ? `expected ${describeUnion(members)}` : e.message })
      if (out.length === MAX_PROBLEMS) break
    }
    return out.length ? out : [{ field: '', message: MISSING }]
  }
  const check = (value: unknown): Static<S> => {
    const found = problems(value)
    const first = found[0]
    if (!first) return value as Static<S>
    throw badRequest(first === NOT_AN_OBJECT ? 'Request body must be a JSON object' : problemMessage(first), { problems: found })
  }
  return Object.assign(check, { problems })
}

export const checkChatBody = validator(ChatBody)

/** gw's routing fields on the bodies of the other APIs (Messages, Responses, embeddings): the chat body's own definitions. */
const GatewayFieldsBody = Open({
  prompt_id: ChatBody.properties.prompt_id,
  'x-gw-prompt-id': ChatBody.properties['x-gw-prompt-id'],
  fallback_chain: ChatBody.properties.fallback_chain,
  'x-gw-fallback-chain': ChatBody.properties['x-gw-fallback-chain'],
})
export const checkGatewayFields = validator(GatewayFieldsBody)

