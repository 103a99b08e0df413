// OpenAI Responses request (POST /v1/responses) → gw's ChatInput: the body checked, gw's fields split
// off, the stateless subset (input items, instructions, function tools and their outputs, text.format,
// reasoning effort) translated into gw's internal chat form for policy and non-OpenAI targets.
// The client's own body is kept for the OpenAI pass-through. Reference: docs/apis.md

import { type Static, Type as t } from '@sinclair/typebox'
import { badRequest } from '../../errors'
import { type RouteResolver, routingOf, withoutGatewayFields } from '../../pipeline/chat-input'
import type { ChatInput } from '../../pipeline/context'
import { withConversationView } from '../../pipeline/policy-view'
import type { ChatMessage, ChatRequest, ContentPart, FunctionTool, ToolChoice } from '../../providers/openai-types'
import { isRecord } from '../../providers/upstream-errors'
import { Identifier, validator } from '../../schemas/chat-body'

const open = { additionalProperties: true }
const Item = t.Object({}, open)

export const ResponsesBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256 }),
    input: t.Optional(t.Union([t.String(), t.Array(Item)])),
    instructions: t.Optional(t.Union([t.String(), t.Null()])),
    stream: t.Optional(t.Boolean()),
    max_output_tokens: t.Optional(t.Union([t.Integer({ minimum: 1 }), t.Null()])),
    temperature: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 2 }), t.Null()])),
    top_p: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()])),
    tools: t.Optional(
      t.Array(
        t.Object(
          {
            type: t.String(),
            name: t.Optional(t.String()),
            description: t.Optional(t.Union([t.String(), t.Null()])),
            parameters: t.Optional(t.Union([t.Object({}, open), t.Null()])),
            strict: t.Optional(t.Union([t.Boolean(), t.Null()])),
          },
          open,
        ),
      ),
    ),
    tool_choice: t.Optional(t.Union([t.String(), t.Object({ type: t.String(), name: t.Optional(t.String()) }, open)])),
    parallel_tool_calls: t.Optional(t.Union([t.Boolean(), t.Null()])),
    text: t.Optional(
      t.Object(
        {
          format: t.Optional(
            t.Object(
              { type: t.String(), name: t.Optional(t.String()), schema: t.Optional(t.Object({}, open)), strict: t.Optional(t.Union([t.Boolean(), t.Null()])) },
              open,
            ),
          ),
        },
        open,
      ),
    ),
    reasoning: t.Optional(t.Union([t.Object({ effort: t.Optional(t.Union([t.String(), t.Null()])) }, open), t.Null()])),
    previous_response_id: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 256 }), t.Null()])),
    metadata: t.Optional(t.Union([t.Object({}, open), t.Null()])),
    user: t.Optional(Identifier()),
  },
  open,
)
export type ResponsesBodyT = Static<typeof ResponsesBody>
const checkResponsesBody = validator(ResponsesBody)

type Obj = Record<string, unknown>
const str = (v: unknown) => (typeof v === 'string' ? v : '')

/** A Responses content part → an OpenAI chat part (undefined when it has no equivalent). */
function chatPart(p: Obj): ContentPart | undefined {
  if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') return { type: 'text', text: str(p.text) }
  if (p.type === 'refusal') return { type: 'text', text: str(p.refusal) }
  if (p.type === 'input_image' && typeof p.image_url === 'string')
    return { type: 'image_url', image_url: { url: p.image_url, ...(typeof p.detail === 'string' ? { detail: p.detail } : {}) } }
  if (p.type === 'input_file' && typeof p.file_data === 'string')
    return { type: 'file', file: { filename: str(p.filename) || 'file', file_data: p.file_data } }
  return undefined
}

function messageContent(content: unknown): string | ContentPart[] {
  if (typeof content === 'string') return content
  const parts = (Array.isArray(content) ? content : []).filter(isRecord).map(chatPart).filter((p) => p !== undefined)
  return parts.every((p) => p.type === 'text') ? parts.map((p) => str((p as Obj).text)).join('') : parts
}

/** `function_call_output.output`: a string, or content parts whose text is joined. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output
  if (!Array.isArray(output)) return JSON.stringify(output ?? '')
  return output.filter(isRecord).map((p) => str(p.text)).join('')
}

/** Input items → chat messages; consecutive function calls join the assistant turn before them. */
export function toChatMessages(input: string | Obj[] | undefined): ChatMessage[] {
  if (input === undefined) return []
  if (typeof input === 'string') return [{ role: 'user', content: input }]
  const out: ChatMessage[] = []
  // Images and files of function outputs: a tool message holds text only, so they follow in a user message after the tool messages.
  let media: ContentPart[] = []
  for (const item of input) {
    const type = item.type ?? 'message'
    if (type !== 'function_call_output' && media.length) {
      out.push({ role: 'user', content: media })
      media = []
    }
    if (type === 'message') {
      const role = item.role === 'assistant' || item.role === 'system' || item.role === 'developer' ? item.role : 'user'
      out.push({ role, content: messageContent(item.content) })
    } else if (type === 'function_call') {
      const call = { id: str(item.call_id), type: 'function' as const, function: { name: str(item.name), arguments: str(item.arguments) || '{}' } }
      const last = out[out.length - 1]
      if (last?.role === 'assistant') {
        last.tool_calls = [...(last.tool_calls ?? []), call]
        if (last.content === '') last.content = null
      } else out.push({ role: 'assistant', content: null, tool_calls: [call] })
    } else if (type === 'function_call_output') {
      out.push({ role: 'tool', tool_call_id: str(item.call_id), content: outputText(item.output) })
      if (Array.isArray(item.output))
        for (const part of item.output.filter(isRecord).map(chatPart)) if (part && part.type !== 'text') media.push(part)
    }
    // reasoning items, item references and built-in tool calls have no chat equivalent.
  }
  if (media.length) out.push({ role: 'user', content: media })
  return out
}

function chatToolChoice(c: ResponsesBodyT['tool_choice']): ToolChoice | undefined {
  if (c === 'auto' || c === 'none' || c === 'required') return c
  if (typeof c === 'object' && c.type === 'function' && c.name !== undefined) return { type: 'function', function: { name: c.name } }
  return undefined
}

/** The Responses body in gw's internal chat form (what policy checks and what other providers get). */
export function toChatRequest(b: ResponsesBodyT, history: ChatMessage[] = []): ChatRequest {
  const messages: ChatMessage[] = []
  if (b.instructions) messages.push({ role: 'system', content: b.instructions })
  messages.push(...history, ...toChatMessages(b.input as string | Obj[] | undefined))
  const req: ChatRequest = { model: b.model, messages }
  if (typeof b.max_output_tokens === 'number') req.max_tokens = b.max_output_tokens
  if (typeof b.temperature === 'number') req.temperature = b.temperature
  if (typeof b.top_p === 'number') req.top_p = b.top_p
  if (b.stream) req.stream = true
  const tools: FunctionTool[] = (b.tools ?? [])
    .filter((tool) => tool.type === 'function' && tool.name !== undefined)
    .map((tool) => ({
      type: 'function',
      function: {
        name: str(tool.name),
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: tool.parameters ?? { type: 'object' },
        ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
      },
    }))
  if (tools.length) {
    req.tools = tools
    const choice = chatToolChoice(b.tool_choice)
    if (choice) req.tool_choice = choice
    if (b.parallel_tool_calls === false) req.parallel_tool_calls = false
  }
  const format = b.text?.format
  if (format?.type === 'json_schema' && format.schema)
    req.response_format = {
      type: 'json_schema',
      json_schema: {
        name: str(format.name) || 'output',
        schema: format.schema,
        ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
      },
    }
  else if (format?.type === 'json_object') req.response_format = { type: 'json_object' }
  const effort = b.reasoning?.effort
  if (typeof effort === 'string') req.reasoning_effort = effort
  return req
}

/** A parsed Responses request: gw's ChatInput, the client's body (OpenAI pass-through) and the body itself. */
export interface ResponsesInput {
  input: ChatInput
  native: Record<string, unknown>
  body: ResponsesBodyT
}

/** `model`: one of the org's routes, `provider/model-id`, or a bare id, which is OpenAI's (what Codex and the SDKs' defaults send). */
export function parseResponsesInput(raw: unknown, routeOf?: RouteResolver): ResponsesInput {
  const body = checkResponsesBody(raw)
  if (body.input === undefined && !body.previous_response_id) throw badRequest('Missing required field "input"')
  const input = withConversationView({
    requestedModel: body.model,
    ...routingOf(raw, body.model, routeOf, 'openai'),
    body: toChatRequest(body),
    stream: body.stream === true,
    // The body's metadata is OpenAI's own; gw metadata comes as x-gw-metadata here.
    metadata: {},
    // The end user, as on chat completions (PRODUCT §11: after a token's claim and x-gw-end-user-id).
    user: body.user,
    outputSchema: undefined,
  })
  const native = withoutGatewayFields(raw as Record<string, unknown>)
  return { input, native, body }
}
