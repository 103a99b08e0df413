// Anthropic Messages answer → OpenAI completion: text blocks joined, tool_use blocks as tool calls
// (or as the JSON content when structured output went through the JSON tool), stop reason, usage.

import type { UpstreamCompletion } from '../adapter'
import type { AssistantMessage, FinishReason, ToolCall, Usage } from '../openai-types'
import { isRecord } from '../upstream-errors'
import { JSON_TOOL } from './request'

export function mapStopReason(reason: unknown): FinishReason | null {
  switch (reason) {
    case null:
    case undefined:
      return null
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length'
    case 'tool_use':
      return 'tool_calls'
    case 'refusal':
      return 'content_filter'
    default: // end_turn, stop_sequence, pause_turn
      return 'stop'
  }
}

/** The text clients get as `refusal` when Claude declines: its own explanation when it gives one. */
export function refusalText(details: unknown): string {
  const why = isRecord(details) && typeof details.explanation === 'string' ? details.explanation : ''
  return why || 'The model declined to answer (stop_reason: refusal).'
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** Anthropic counts cache reads and writes apart from `input_tokens`; OpenAI's prompt_tokens includes them. */
export function toUsage(u: Record<string, unknown>): Usage {
  const read = num(u.cache_read_input_tokens)
  const write = num(u.cache_creation_input_tokens)
  const prompt = num(u.input_tokens) + read + write
  const completion = num(u.output_tokens)
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: write ? { cached_tokens: read, cache_write_tokens: write } : { cached_tokens: read },
  }
  const thinking = isRecord(u.output_tokens_details) ? u.output_tokens_details.thinking_tokens : undefined
  if (typeof thinking === 'number') usage.completion_tokens_details = { reasoning_tokens: thinking }
  return usage
}

/** `jsonTool`: structured output was requested through the JSON tool, whose input is the answer. */
export function readAnthropicMessage(json: unknown, jsonTool: boolean): UpstreamCompletion {
  if (!isRecord(json) || !Array.isArray(json.content)) throw new Error('answer has no content array')
  const text: string[] = []
  const toolCalls: ToolCall[] = []
  let jsonAnswer: string | undefined
  for (const b of json.content) {
    if (!isRecord(b)) continue
    if (b.type === 'text' && typeof b.text === 'string') text.push(b.text)
    if (b.type !== 'tool_use' || typeof b.name !== 'string' || typeof b.id !== 'string') continue
    if (jsonTool && b.name === JSON_TOOL) jsonAnswer = JSON.stringify(b.input ?? {})
    else toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } })
  }
  let finish = mapStopReason(json.stop_reason) ?? 'stop'
  if (jsonAnswer !== undefined && toolCalls.length === 0 && finish === 'tool_calls') finish = 'stop'
  const refusal = json.stop_reason === 'refusal' ? refusalText(json.stop_details) : null
  const message: AssistantMessage = {
    role: 'assistant',
    content: jsonAnswer ?? (text.length ? text.join('') : toolCalls.length || refusal ? null : ''),
    refusal,
  }
  if (toolCalls.length) message.tool_calls = toolCalls
  const out: UpstreamCompletion = { choices: [{ index: 0, message, finish_reason: finish, logprobs: null }] }
  if (typeof json.id === 'string') out.id = json.id
  if (typeof json.model === 'string') out.model = json.model
  if (isRecord(json.usage)) out.usage = toUsage(json.usage)
  return out
}
