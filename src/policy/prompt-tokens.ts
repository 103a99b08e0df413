// Prompt token counts for policy limits, with a real BPE tokenizer (o200k_base), loaded on first need.

import type { ChatMessage } from '../providers/openai-types'
import { messageText } from '../tokens'

type Counter = (text: string) => number
let loading: Promise<Counter> | undefined

/**
 * The tokenizer costs ~0.5 s and ~90 MB to load, so it is loaded only when an org has a
 * `maxPromptTokens` policy; `warmTokenizer` starts that early (when such a policy is read).
 */
export function warmTokenizer(): Promise<Counter> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text))
  return loading
}

/**
 * Tokens of a conversation as OpenAI counts chat input: the text of each message plus 3 tokens
 * of framing per message and 3 priming the answer; tool calls by their JSON; each image 85 tokens
 * (the low-detail figure). Exact for OpenAI's current models, close for the other providers.
 */
export async function countPromptTokens(messages: readonly ChatMessage[]): Promise<number> {
  const count = await warmTokenizer()
  let n = 3
  for (const m of messages) {
    n += 3 + count(m.role) + count(messageText(m))
    if (m.name) n += 1 + count(m.name)
    if (m.tool_calls) n += count(JSON.stringify(m.tool_calls))
    if (Array.isArray(m.content)) for (const p of m.content) if (p.type === 'image_url') n += 85
  }
  return n
}
