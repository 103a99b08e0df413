// Structured output as adapters see it: what the request's `response_format` asks for, the JSON hint
// some providers need in the prompt, and the schema rewrites their native mechanisms require.

import type { ChatMessage, ChatRequest } from './openai-types'
import { isRecord } from './upstream-errors'

export type Schema = Record<string, unknown>

export type JsonRequest =
  | { mode: 'json_object' }
  | { mode: 'json_schema'; name: string | undefined; schema: Schema; strict: boolean | undefined }

/** The structured output a request asks for (gw's output_schema arrives here as `response_format` too). */
export function jsonRequest(req: ChatRequest): JsonRequest | undefined {
  const rf = req.response_format
  if (rf?.type === 'json_object') return { mode: 'json_object' }
  if (rf?.type !== 'json_schema' || !rf.json_schema) return undefined
  const { name, schema, strict } = rf.json_schema
  return isRecord(schema) ? { mode: 'json_schema', name, schema, strict } : { mode: 'json_object' }
}

/** The tool structured output is forced through where a provider has no JSON mode of its own (Anthropic's older models, Bedrock's Converse). */
export const JSON_TOOL = 'json_response'
/** Said in the system prompt when the client's own tools keep the JSON tool from being forced. */
export const JSON_TOOL_HINT = `When you give your final answer, give it by calling the ${JSON_TOOL} tool.`

/** Added as a system message when a JSON-mode request never says "JSON" (OpenAI refuses those). */
export const JSON_HINT = 'Answer with a single JSON object and nothing else: no prose, no Markdown code fences.'

function mentionsJson(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => {
    const c = m.content
    if (typeof c === 'string') return /json/i.test(c)
    return Array.isArray(c) && c.some((p) => p.type === 'text' && typeof p.text === 'string' && /json/i.test(p.text))
  })
}

/** The whole instruction where the JSON can only be asked for in the prompt: the hint, and the schema when there is one. */
export function jsonPromptHint(json: JsonRequest): string {
  return json.mode === 'json_schema' ? `${JSON_HINT} It must match this JSON Schema: ${JSON.stringify(json.schema)}` : JSON_HINT
}

export function withJsonHint(messages: ChatMessage[]): ChatMessage[] {
  return mentionsJson(messages) ? messages : [{ role: 'system', content: JSON_HINT }, ...messages]
}

const MAPS = ['properties', '$defs', 'definitions'] as const
const LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const

/** A copy of the schema with `fn` applied to every (sub)schema node, innermost first. */
export function mapSchema(schema: Schema, fn: (node: Schema) => Schema): Schema {
  const out: Schema = { ...schema }
  for (const k of MAPS) {
    const v = out[k]
    if (isRecord(v)) out[k] = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, isRecord(s) ? mapSchema(s, fn) : s]))
  }
  for (const k of LISTS) {
    const v = out[k]
    if (Array.isArray(v)) out[k] = v.map((s) => (isRecord(s) ? mapSchema(s, fn) : s))
  }
  for (const k of ['items', 'additionalProperties'] as const) {
    const v = out[k]
    if (isRecord(v)) out[k] = mapSchema(v, fn)
  }
  return fn(out)
}

export function isObjectNode(n: Schema): boolean {
  return n.type === 'object' || (Array.isArray(n.type) && n.type.includes('object')) || isRecord(n.properties)
}

/** Every object closed with `additionalProperties: false` (OpenAI strict mode and Anthropic require it). */
export function closeObjects(schema: Schema): Schema {
  return mapSchema(schema, (n) => (isObjectNode(n) ? { ...n, additionalProperties: false } : n))
}

/**
 * Can OpenAI's strict mode enforce this schema without changing which answers are valid? Yes when the
 * root is an object and every object lists all its properties as required and does not open itself
 * to other properties: closing such objects only narrows what the model may say to answers the
 * original schema accepts as well.
 */
export function strictCompatible(schema: Schema): boolean {
  let ok = isObjectNode(schema)
  mapSchema(schema, (n) => {
    if (!isObjectNode(n)) return n
    const required = Array.isArray(n.required) ? n.required : []
    const props = isRecord(n.properties) ? Object.keys(n.properties) : []
    if (props.some((p) => !required.includes(p))) ok = false
    if (n.additionalProperties !== undefined && n.additionalProperties !== false) ok = false
    return n
  })
  return ok
}
