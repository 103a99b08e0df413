// previous_response_id for a model that is not OpenAI's: the earlier turns are rebuilt from gw's own
// log of that response (its request and answer bodies, whole), whether gw translated it or relayed
// OpenAI's, else 400 naming the field (PRODUCT §12).

import { badRequest } from '../../errors'
import type { AuthedContext, Deps } from '../../pipeline/context'
import type { ChatMessage } from '../../providers/openai-types'
import { isRecord } from '../../providers/upstream-errors'
import { requestIdOfResponse } from './answer'
import { toChatMessages } from './request'

/** How many earlier responses a chain of previous_response_id may reach back through. */
const MAX_DEPTH = 50

const refuse = (id: string, why: string) =>
  badRequest(`Invalid field "previous_response_id": "${id.slice(0, 64)}" cannot be continued here: ${why}`)

/** The turns before the current input: each earlier request's input, then that response's output. */
export async function previousTurns(deps: Deps, ctx: AuthedContext, id: string, depth = 0): Promise<ChatMessage[]> {
  if (depth >= MAX_DEPTH) throw refuse(id, `the conversation is longer than ${MAX_DEPTH} responses`)
  const orgId = ctx.identity.orgId
  // gw's own id names the request; an OpenAI id is looked up among the answers gw relayed (LogEntry.responseId).
  const requestId = requestIdOfResponse(id)
  const entry = requestId
    ? (deps.logs.pendingEntry(orgId, requestId) ?? (await deps.store.logs.getLog(orgId, requestId)))
    : (deps.logs.pendingByResponse(orgId, id) ?? (await deps.store.logs.getLogByResponseId(orgId, id)))
  // A response this endpoint answered (the entry of another endpoint is not a response).
  if (!entry || entry.endpoint !== ctx.endpoint) throw refuse(id, 'no such response in the log')
  const req = entry.requestBody
  const res = entry.responseBody
  if (!isRecord(req) || !isRecord(res) || req.truncated === true || res.truncated === true)
    throw refuse(id, 'its bodies are not in the log whole (GW_LOG_BODIES off, truncated or pruned)')
  const before = typeof req.previous_response_id === 'string' ? await previousTurns(deps, ctx, req.previous_response_id, depth + 1) : []
  const input = toChatMessages(req.input as string | Record<string, unknown>[] | undefined)
  return [...before, ...input, ...answerTurns(res)]
}

/** What the model said: a `response` object's output items, or a streamed answer's logged transcript. */
function answerTurns(res: Record<string, unknown>): ChatMessage[] {
  if (Array.isArray(res.output)) return toChatMessages(res.output.filter(isRecord))
  const content = typeof res.content === 'string' ? res.content : ''
  const calls = Array.isArray(res.tool_calls) ? (res.tool_calls as ChatMessage['tool_calls']) : undefined
  if (!content && !calls?.length) return []
  return [{ role: 'assistant', content: content || null, ...(calls?.length ? { tool_calls: calls } : {}) }]
}
