// OpenAI messages → Anthropic `system` + `messages`: system and developer text hoisted into `system`,
// tool results folded into user turns, consecutive same-role turns merged, tool_result blocks first.

import { type ImageSource, pieces, textOf } from '../content'
import type { ChatMessage } from '../openai-types'
import { fitToolId } from '../tool-ids'
import { isRecord, parseJson } from '../upstream-errors'

type Block = Record<string, unknown>
type Role = 'user' | 'assistant'

export interface AnthropicMessage {
  role: Role
  content: string | Block[]
}

/** Anthropic tool_use ids must match [a-zA-Z0-9_-]+; others (and very long ones) are replaced stably. */
export const anthropicToolId = (id: string) => fitToolId(id, 64, /^[a-zA-Z0-9_-]+$/, 'toolu_')

function imageBlock(source: ImageSource): Block {
  return source.kind === 'inline'
    ? { type: 'image', source: { type: 'base64', media_type: source.mediaType, data: source.data } }
    : { type: 'image', source: { type: 'url', url: source.url } }
}

function userBlocks(m: ChatMessage): Block[] {
  return pieces(m, 'anthropic').map((p) => (p.kind === 'text' ? { type: 'text', text: p.text } : imageBlock(p.source)))
}

/** Tool-call arguments as the object Anthropic wants; arguments that are not a JSON object become `{}`. */
function toolInput(args: string | undefined): Record<string, unknown> {
  const parsed = parseJson(args ?? '')
  return isRecord(parsed) ? parsed : {}
}

function assistantBlocks(m: ChatMessage): Block[] {
  const blocks: Block[] = []
  const text = textOf(m, 'anthropic')
  if (text) blocks.push({ type: 'text', text })
  for (const tc of m.tool_calls ?? [])
    blocks.push({ type: 'tool_use', id: anthropicToolId(tc.id), name: tc.function.name, input: toolInput(tc.function.arguments) })
  return blocks
}

function toolResultBlock(m: ChatMessage): Block {
  const block: Block = { type: 'tool_result', tool_use_id: anthropicToolId(m.tool_call_id ?? '') }
  const text = textOf(m, 'anthropic')
  if (text) block.content = text
  return block
}

/** A turn as sent: tool results lead (Anthropic's rule); a lone text block becomes plain string content. */
function finishTurn(role: Role, blocks: Block[]): AnthropicMessage {
  const ordered = role === 'user' ? [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')] : blocks
  const only = ordered[0]
  if (ordered.length === 1 && only?.type === 'text' && typeof only.text === 'string') return { role, content: only.text }
  return { role, content: ordered }
}

export function toAnthropicMessages(messages: readonly ChatMessage[]): { system: string; messages: AnthropicMessage[] } {
  const system: string[] = []
  const turns: { role: Role; blocks: Block[] }[] = []
  const add = (role: Role, blocks: Block[]) => {
    if (blocks.length === 0) return
    const last = turns[turns.length - 1]
    if (last?.role === role) last.blocks.push(...blocks)
    else turns.push({ role, blocks })
  }
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textOf(m, 'anthropic')
        if (text) system.push(text)
        break
      }
      case 'user':
        add('user', userBlocks(m))
        break
      case 'assistant':
        add('assistant', assistantBlocks(m))
        break
      case 'tool':
        add('user', [toolResultBlock(m)])
        break
      default: {
        const unknownRole: never = m.role
        throw new Error(`unknown role ${String(unknownRole)}`)
      }
    }
  }
  return { system: system.join('\n\n'), messages: turns.map((t) => finishTurn(t.role, t.blocks)) }
}
