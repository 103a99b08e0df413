// Managed prompt caching for Anthropic models (PRODUCT §19, policy `promptCaching: "auto"`): a request
// whose stable prefix (tools, system, every turn before the final user turn) is long enough to be cached
// gets breakpoints on the last tool, the last system block and the last block before the final user
// turn; four at most, the caller's own counted and never moved.

import { estimateTokens } from '../../tokens'

type Block = Record<string, unknown>

/** Anthropic's limit on breakpoints in one request. */
export const MAX_BREAKPOINTS = 4
const EPHEMERAL = { type: 'ephemeral' }

/** The shortest prefix the model caches: 2,048 tokens for Haiku models, 1,024 for the others. */
export const minCacheableTokens = (modelId: string): number => (/haiku/i.test(modelId) ? 2048 : 1024)

const blocksOf = (content: unknown): Block[] => (Array.isArray(content) ? (content as Block[]) : [])

/** The request's breakpoints: tools, system blocks and the blocks of every message. */
function countBreakpoints(tools: Block[], system: unknown, messages: { content: unknown }[]): number {
  let n = 0
  for (const b of [...tools, ...blocksOf(system), ...messages.flatMap((m) => blocksOf(m.content))]) if (b.cache_control) n++
  return n
}

/** Adds the breakpoints to an Anthropic Messages body (direct or on Vertex), in place; Bedrock's Converse body has its own (cachePoint). */
export function addCacheBreakpoints(body: Record<string, unknown>, modelId: string): void {
  const tools = blocksOf(body.tools)
  const messages = (body.messages ?? []) as { role: string; content: unknown }[]
  const finalUser = messages.findLastIndex((m) => m.role === 'user')
  const prefix = JSON.stringify([tools, body.system ?? '', messages.slice(0, Math.max(0, finalUser))])
  if (estimateTokens(prefix) < minCacheableTokens(modelId)) return
  let count = countBreakpoints(tools, body.system, messages)
  const mark = (b: Block | undefined) => {
    if (!b || b.cache_control || count >= MAX_BREAKPOINTS) return
    b.cache_control = EPHEMERAL
    count++
  }
  mark(tools[tools.length - 1])
  // String content becomes one text block only when it gets the breakpoint.
  if (typeof body.system === 'string' && body.system && count < MAX_BREAKPOINTS) body.system = [{ type: 'text', text: body.system }]
  const system = blocksOf(body.system)
  mark(system[system.length - 1])
  const before = finalUser > 0 ? messages[finalUser - 1] : undefined
  if (before && count < MAX_BREAKPOINTS) {
    if (typeof before.content === 'string') before.content = [{ type: 'text', text: before.content }]
    const blocks = blocksOf(before.content)
    mark(blocks[blocks.length - 1])
  }
}
