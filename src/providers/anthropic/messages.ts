// OpenAI messages → Anthropic `system` + `messages`: system and developer text hoisted into `system`,
// tool results folded into user turns, consecutive same-role turns merged, tool_result blocks first.

import { cacheControlOf, type ImageSource, type Piece, pieces, textOf } from '../content'
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

/** A block with the `cache_control` its part gave it (PRODUCT §19: a chat client's breakpoints reach Anthropic as given). */
const cached = (block: Block, p: Piece): Block => (p.cache ? { ...block, cache_control: p.cache } : block)

/** A message's own `cache_control` (string content) goes on its last block. */
function withMessageCache(m: ChatMessage, blocks: Block[]): Block[] {
  const cache = cacheControlOf(m)
  const last = blocks[blocks.length - 1]
  if (cache && last) blocks[blocks.length - 1] = { ...last, cache_control: cache }
  return blocks
}

/** The breakpoint a text made of several parts carries: the last one any of them set. */
const cacheOfPieces = (ps: Piece[]) => ps.findLast((p) => p.cache)?.cache

function userBlocks(m: ChatMessage): Block[] {
  return withMessageCache(
    m,
    pieces(m, 'anthropic').map((p) => cached(p.kind === 'text' ? { type: 'text', text: p.text } : imageBlock(p.source), p)),
  )
}

/** Tool-call arguments as the object Anthropic wants; arguments that are not a JSON object become `{}`. */
function toolInput(args: string | undefined): Record<string, unknown> {
  const parsed = parseJson(args ?? '')
  return isRecord(parsed) ? parsed : {}
}

function assistantBlocks(m: ChatMessage): Block[] {
  const blocks: Block[] = []
  const text = textOf(m, 'anthropic')
  const cache = cacheOfPieces(pieces(m, 'anthropic'))
  if (text) blocks.push(cache ? { type: 'text', text, cache_control: cache } : { type: 'text', text })
  for (const tc of m.tool_calls ?? [])
    blocks.push({ type: 'tool_use', id: anthropicToolId(tc.id), name: tc.function.name, input: toolInput(tc.function.arguments) })
  return withMessageCache(m, blocks)
}

function toolResultBlock(m: ChatMessage): Block {
  const block: Block = { type: 'tool_result', tool_use_id: anthropicToolId(m.tool_call_id ?? '') }
  const text = textOf(m, 'anthropic')
  if (text) block.content = text
  const cache = cacheOfPieces(pieces(m, 'anthropic')) ?? cacheControlOf(m)
  if (cache) block.cache_control = cache
  return block
}

/** A turn as sent: tool results lead (Anthropic's rule); a lone text block becomes plain string content. */
function finishTurn(role: Role, blocks: Block[]): AnthropicMessage {
  const ordered = role === 'user' ? [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')] : blocks
  const only = ordered[0]
  if (ordered.length === 1 && only?.type === 'text' && typeof only.text === 'string' && !only.cache_control) return { role, content: only.text }
  return { role, content: ordered }
}

/**
 * The system text, and the messages. `system` is blocks (one per system or developer message) when one
 * of them carries a `cache_control`, else one string.
 */
export function toAnthropicMessages(messages: readonly ChatMessage[]): { system: string | Block[]; messages: AnthropicMessage[] } {
  const system: string[] = []
  const systemCache: (Record<string, unknown> | undefined)[] = []
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
        if (text) {
          system.push(text)
          systemCache.push(cacheOfPieces(pieces(m, 'anthropic')) ?? cacheControlOf(m))
        }
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
  const turnsOut = turns.map((t) => finishTurn(t.role, t.blocks))
  if (!systemCache.some(Boolean)) return { system: system.join('\n\n'), messages: turnsOut }
  const blocks = system.map((text, i) => (systemCache[i] ? { type: 'text', text, cache_control: systemCache[i] } : { type: 'text', text }))
  return { system: blocks, messages: turnsOut }
}
