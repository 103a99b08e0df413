// Anthropic Messages request (POST /v1/messages) → gw's ChatInput: the body checked, gateway fields
// split off, and translated into gw's internal chat form for policy and for non-Anthropic targets.
// The client's own body is kept (minus gateway fields) for the Anthropic pass-through.
// Reference: docs/apis.md

import { type Static, Type as t } from '@sinclair/typebox'
import { type RouteResolver, routingOf, withoutGatewayFields } from '../../pipeline/chat-input'
import type { ChatInput } from '../../pipeline/context'
import { withConversationView } from '../../pipeline/policy-view'
import type { ChatMessage, ChatRequest, ContentPart, FunctionTool, ToolCall, ToolChoice } from '../../providers/openai-types'
import { isRecord } from '../../providers/upstream-errors'
import { validator } from '../../schemas/chat-body'
import { type MessagesThinking, thinkingOf } from './thinking'

const open = { additionalProperties: true }
const BlockBody = t.Object({ type: t.String() }, open)
const Content = t.Union([t.String(), t.Array(BlockBody)])
const Tool = t.Object(
  { name: t.String(), type: t.Optional(t.String()), description: t.Optional(t.String()), input_schema: t.Optional(t.Object({}, open)) },
  open,
)

export const MessagesBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256 }),
    max_tokens: t.Integer({ minimum: 0 }),
    messages: t.Array(t.Object({ role: t.Union([t.Literal('user'), t.Literal('assistant')]), content: Content }, open), {
      minItems: 1,
    }),
    system: t.Optional(Content),
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
    top_p: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
    stop_sequences: t.Optional(t.Array(t.String())),
    stream: t.Optional(t.Boolean()),
    tools: t.Optional(t.Array(Tool)),
    tool_choice: t.Optional(t.Object({ type: t.String(), name: t.Optional(t.String()) }, open)),
    metadata: t.Optional(t.Object({}, open)),
    output_config: t.Optional(t.Object({ format: t.Optional(t.Object({ type: t.String() }, open)) }, open)),
  },
  open,
)
export type MessagesBodyT = Static<typeof MessagesBody>
const checkMessagesBody = validator(MessagesBody)

export const CountTokensBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256 }),
    messages: MessagesBody.properties.messages,
    system: t.Optional(Content),
    tools: t.Optional(t.Array(Tool)),
    tool_choice: MessagesBody.properties.tool_choice,
    output_config: MessagesBody.properties.output_config,
  },
  open,
)
type CountTokensBodyT = Static<typeof CountTokensBody>
const checkCountTokensBody = validator(CountTokensBody)

type Block = Record<string, unknown>

const blocksOf = (c: string | Block[]): Block[] => (typeof c === 'string' ? [{ type: 'text', text: c }] : c)
const str = (v: unknown) => (typeof v === 'string' ? v : '')

/** Text of `system`, or of a tool result's content. */
function textOfBlocks(c: unknown): string {
  if (typeof c === 'string') return c
  if (!Array.isArray(c)) return ''
  return c
    .filter((b): b is Block => isRecord(b) && b.type === 'text')
    .map((b) => str(b.text))
    .join('\n')
}

/** An image or document block as an OpenAI content part; undefined when it has no equivalent. */
function mediaPart(b: Block): ContentPart | undefined {
  const src = isRecord(b.source) ? b.source : {}
  if (b.type === 'image') {
    if (src.type === 'base64') return { type: 'image_url', image_url: { url: `data:${str(src.media_type)};base64,${str(src.data)}` } }
    if (src.type === 'url') return { type: 'image_url', image_url: { url: str(src.url) } }
  }
  if (b.type === 'document') {
    if (src.type === 'text') return { type: 'text', text: str(src.data) }
    if (src.type === 'base64')
      return { type: 'file', file: { filename: str(b.title) || 'document.pdf', file_data: `data:${str(src.media_type)};base64,${str(src.data)}` } }
  }
  return undefined
}

/** One Anthropic turn → OpenAI messages (a user turn's tool results become `tool` messages first). */
function toChatMessages(role: 'user' | 'assistant', content: string | Block[]): ChatMessage[] {
  const blocks = blocksOf(content)
  if (role === 'assistant') {
    const text = blocks.filter((b) => b.type === 'text').map((b) => str(b.text)).join('')
    const toolCalls: ToolCall[] = blocks
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } }))
    const m: ChatMessage = { role: 'assistant', content: text || (toolCalls.length ? null : '') }
    if (toolCalls.length) m.tool_calls = toolCalls
    return [m]
  }
  const out: ChatMessage[] = []
  const parts: ContentPart[] = []
  for (const b of blocks) {
    if (b.type === 'tool_result') {
      const text = textOfBlocks(b.content)
      out.push({ role: 'tool', tool_call_id: str(b.tool_use_id), content: b.is_error === true ? `Error: ${text}` : text })
      // A tool message holds text only: its images and documents follow in the user message after the tool messages.
      if (Array.isArray(b.content))
        for (const inner of b.content) {
          const part = isRecord(inner) && inner.type !== 'text' ? mediaPart(inner as Block) : undefined
          if (part) parts.push(part)
        }
    } else if (b.type === 'text') {
      parts.push({ type: 'text', text: str(b.text) })
    } else {
      const part = mediaPart(b)
      if (part) parts.push(part)
    }
  }
  if (parts.length) {
    const text = parts.every((p) => p.type === 'text') ? parts.map((p) => str((p as Block).text)).join('\n') : undefined
    out.push({ role: 'user', content: text ?? parts })
  }
  return out
}

function toolChoice(tc: Block | undefined): { choice?: ToolChoice; parallel?: boolean } {
  if (!tc) return {}
  const parallel = tc.disable_parallel_tool_use === true ? false : undefined
  const choice: ToolChoice | undefined =
    tc.type === 'auto' ? 'auto' : tc.type === 'none' ? 'none' : tc.type === 'any' ? 'required' : tc.type === 'tool' ? { type: 'function', function: { name: str(tc.name) } } : undefined
  return { ...(choice ? { choice } : {}), ...(parallel === false ? { parallel } : {}) }
}

/** The Messages body in gw's internal chat form (what policy checks and what other providers get). */
export function toChatRequest(b: MessagesBodyT): ChatRequest {
  const req = conversationOf(b)
  if (b.max_tokens >= 1) req.max_tokens = b.max_tokens
  if (b.temperature !== undefined) req.temperature = b.temperature
  if (b.top_p !== undefined) req.top_p = b.top_p
  if (b.stop_sequences?.length) req.stop = b.stop_sequences
  if (b.stream) req.stream = true
  return req
}

/** What a Messages body gives as prompt, in gw's chat form: system, messages, client tools, the output format. */
function conversationOf(b: CountTokensBodyT): ChatRequest {
  const messages: ChatMessage[] = []
  const system = textOfBlocks(b.system)
  if (system) messages.push({ role: 'system', content: system })
  for (const m of b.messages) messages.push(...toChatMessages(m.role, m.content as string | Block[]))
  const req: ChatRequest = { model: b.model, messages }
  // Client tools only: server tools (web search, code execution…) have no equivalent elsewhere.
  const tools: FunctionTool[] = (b.tools ?? [])
    .filter((tool) => tool.type === undefined || tool.type === 'custom')
    .map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.input_schema ?? { type: 'object' },
      },
    }))
  if (tools.length) {
    req.tools = tools
    const { choice, parallel } = toolChoice(b.tool_choice)
    if (choice) req.tool_choice = choice
    if (parallel === false) req.parallel_tool_calls = false
  }
  const format: Block | undefined = b.output_config?.format
  if (format?.type === 'json_schema' && isRecord(format.schema))
    req.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } }
  return req
}

/** A parsed Messages request: gw's ChatInput plus the client's body as it goes to Anthropic. */
export interface MessagesInput {
  input: ChatInput
  /** The client's body minus gw's fields, for the Anthropic pass-through. */
  native: Record<string, unknown>
  /** `thinking` / `output_config.effort` for the other providers (undefined: none asked for). */
  thinking: MessagesThinking | undefined
}

/** `model`: one of the org's routes, `provider/model-id`, or a bare id, which is Anthropic's. */
export function parseMessagesInput(raw: unknown, routeOf?: RouteResolver): MessagesInput {
  const b = checkMessagesBody(raw)
  const input = messagesInput(raw, b, toChatRequest(b), routeOf, true)
  input.stream = b.stream === true
  return { input, native: withoutGatewayFields(raw as Record<string, unknown>), thinking: thinkingOf(b) }
}

/**
 * count_tokens: the prompt of a Messages request (system, messages, tools), which is only counted: its
 * policy view generates nothing, so the org's output limit neither refuses nor fills anything, and the
 * count reads the prompt alone, whatever output settings the body carries.
 */
export function parseCountTokensInput(raw: unknown, routeOf?: RouteResolver): MessagesInput {
  const b = checkCountTokensBody(raw)
  const input = messagesInput(raw, b, conversationOf(b), routeOf, false)
  return { input, native: withoutGatewayFields(raw as Record<string, unknown>), thinking: undefined }
}

function messagesInput(raw: unknown, b: CountTokensBodyT, body: ChatRequest, routeOf: RouteResolver | undefined, generates: boolean): ChatInput {
  return withConversationView(
    {
      requestedModel: b.model,
      ...routingOf(raw, b.model, routeOf, 'anthropic'),
      body,
      stream: false,
      // The body's metadata is Anthropic's own (user_id); gw metadata comes as x-gw-metadata here.
      metadata: {},
      user: undefined,
      outputSchema: undefined,
    },
    generates,
  )
}
