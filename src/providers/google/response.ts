// Gemini GenerateContentResponse → OpenAI terms, for whole answers and for each stream chunk: parts
// (thoughts skipped unless asked for, function calls with synthesised ids carrying their thought
// signature), finish reason, prompt blocks, usage.

import type { UpstreamCompletion } from '../adapter'
import type { AssistantMessage, FinishReason, ToolCall, Usage } from '../openai-types'
import { geminiToolId } from '../tool-ids'
import { isRecord } from '../upstream-errors'

const SAFETY = new Set([
  'SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION',
])

/** Gemini says STOP even when it called a function, so whether it did decides `tool_calls`. */
export function mapFinishReason(reason: unknown, hasToolCalls: boolean): FinishReason | null {
  if (typeof reason !== 'string') return null
  if (SAFETY.has(reason)) return 'content_filter'
  if (reason === 'MAX_TOKENS' || reason === 'CONTINUATION') return 'length'
  return hasToolCalls ? 'tool_calls' : 'stop' // STOP, and MALFORMED_FUNCTION_CALL, OTHER, … as a plain stop
}

export function refusalFor(reason: string): string {
  return `The answer was blocked by the provider's safety filters (finishReason: ${reason}).`
}

/** The prompt itself was blocked: no candidates, only `promptFeedback.blockReason`. */
export function promptBlock(json: Record<string, unknown>): string | undefined {
  const fb = json.promptFeedback
  if (!isRecord(fb) || typeof fb.blockReason !== 'string') return undefined
  const why = typeof fb.blockReasonMessage === 'string' ? ` ${fb.blockReasonMessage}` : ''
  return `The prompt was blocked by the provider (blockReason: ${fb.blockReason}).${why}`
}

export interface CandidateParts {
  text: string
  /** Text of the thought parts (Gemini sends them only when asked with includeThoughts). */
  thoughts: string
  toolCalls: ToolCall[]
}

export function readParts(content: unknown): CandidateParts {
  const out: CandidateParts = { text: '', thoughts: '', toolCalls: [] }
  const parts = isRecord(content) && Array.isArray(content.parts) ? content.parts : []
  for (const p of parts) {
    if (!isRecord(p)) continue
    if (p.thought === true) {
      if (typeof p.text === 'string') out.thoughts += p.text
      continue
    }
    if (typeof p.text === 'string') out.text += p.text
    const fc = p.functionCall
    if (!isRecord(fc) || typeof fc.name !== 'string') continue
    const signature = typeof p.thoughtSignature === 'string' ? p.thoughtSignature : undefined
    out.toolCalls.push({ id: geminiToolId(signature), type: 'function', function: { name: fc.name, arguments: JSON.stringify(fc.args ?? {}) } })
  }
  return out
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** Thinking tokens are not in candidatesTokenCount; OpenAI's completion_tokens includes reasoning. */
export function toUsage(u: Record<string, unknown>): Usage {
  const prompt = num(u.promptTokenCount) + num(u.toolUsePromptTokenCount)
  const thoughts = num(u.thoughtsTokenCount)
  const completion = num(u.candidatesTokenCount) + thoughts
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: num(u.cachedContentTokenCount) },
  }
  if (thoughts) usage.completion_tokens_details = { reasoning_tokens: thoughts }
  return usage
}

/** `showThinking`: the thought parts' text goes on the message as `reasoning_content` (else it is dropped). */
export function readGeminiResponse(json: unknown, showThinking = false): UpstreamCompletion {
  if (!isRecord(json)) throw new Error('answer is not an object')
  const candidate = Array.isArray(json.candidates) && isRecord(json.candidates[0]) ? json.candidates[0] : undefined
  const blocked = candidate ? undefined : promptBlock(json)
  if (!candidate && !blocked) throw new Error('answer has no candidates')
  const { text, thoughts, toolCalls } = readParts(candidate?.content)
  const reason = candidate?.finishReason
  const finish = blocked ? 'content_filter' : (mapFinishReason(reason, toolCalls.length > 0) ?? 'stop')
  const message: AssistantMessage = {
    role: 'assistant',
    content: text || (toolCalls.length || finish === 'content_filter' ? null : ''),
    refusal: blocked ?? (finish === 'content_filter' ? refusalFor(String(reason)) : null),
  }
  if (toolCalls.length) message.tool_calls = toolCalls
  if (showThinking && thoughts) message.reasoning_content = thoughts
  const out: UpstreamCompletion = { choices: [{ index: 0, message, finish_reason: finish, logprobs: null }] }
  if (typeof json.responseId === 'string') out.id = json.responseId
  if (typeof json.modelVersion === 'string') out.model = json.modelVersion
  if (isRecord(json.usageMetadata)) out.usage = toUsage(json.usageMetadata)
  return out
}
