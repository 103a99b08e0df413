// Token estimates for when a provider reports no usage and for pre-flight context checks.

import type { ChatMessage } from './providers/openai-types'

/** A rough count (about 4 characters per token), never below 1 for non-empty text. */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4))
}

export function messageText(m: ChatMessage): string {
  const c = m.content
  if (typeof c === 'string') return c
  if (!Array.isArray(c)) return ''
  let out = ''
  for (const p of c) if (p.type === 'text' && typeof p.text === 'string') out += p.text
  return out
}

/**
 * The estimate of each conversation, worked out once per request: the rate limit, each attempt's
 * context-window check and the usage estimate share it (a request's messages are not changed once parsed;
 * clamping and the adapters copy what they change).
 */
const estimates = new WeakMap<readonly ChatMessage[], number>()

/** Prompt tokens of a conversation: message text plus a small per-message overhead. */
export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  const known = estimates.get(messages)
  if (known !== undefined) return known
  let n = 3
  for (const m of messages) {
    n += 4 + estimateTokens(messageText(m))
    if (m.tool_calls) n += estimateTokens(JSON.stringify(m.tool_calls))
  }
  estimates.set(messages, n)
  return n
}
