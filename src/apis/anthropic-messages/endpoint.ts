// POST /v1/messages and /v1/messages/count_tokens, declared (PRODUCT §12, §16): Anthropic's Messages
// API; Anthropic answers relayed as they came, the other providers translated.

import type { Wire } from '../../providers/provider-id'
import { adapterFor } from '../../providers/registry'
import { withHeaderFields } from '../../pipeline/chat-input'
import type { EndpointDeclaration } from '../../pipeline/endpoint'
import { applyGatewayHeaders } from '../../pipeline/prompt-input'
import { CountTokensAnswer, MessageAnswer } from '../../schemas/answers'
import { MESSAGES_SHAPE } from './answer'
import { countingContext, estimateCount } from './count-tokens'
import { anthropicCountTokens, anthropicPassThrough } from './pass-through'
import { CountTokensBody, MessagesBody, parseCountTokensInput, parseMessagesInput } from './request'
import { thinkingAdapter } from './thinking'

export const messages: EndpointDeclaration = {
  id: 'createMessage',
  method: 'POST',
  path: '/v1/messages',
  summary: "A message in Anthropic's Messages format from any provider (Anthropic's own answers relayed unchanged)",
  audience: 'client',
  body: MessagesBody,
  answer: MessageAnswer,
  streams: true,
  errorStyle: 'anthropic',
  operation: 'chat',
  listed: true,
  async plan({ deps, ctx, body, routeOf }) {
    const { input, native, thinking } = parseMessagesInput(withHeaderFields(body.value, ctx.headers), routeOf)
    await applyGatewayHeaders(deps, ctx, input)
    const passThrough = anthropicPassThrough(native, ctx.headers)
    const translating = (p: Wire) => (thinking ? thinkingAdapter(p, thinking) : adapterFor(p))
    return {
      input,
      shape: MESSAGES_SHAPE,
      adapters: (p) => (p === 'anthropic' ? passThrough : translating(p)),
      translating,
      sendsClientBody: true,
    }
  },
}

/**
 * Anthropic's count, or gw's own estimate for other providers; both under the policy a count runs
 * under (`countingContext`: no token rates, prompt-token limit or budgets).
 */
export const countTokens: EndpointDeclaration = {
  id: 'countMessageTokens',
  method: 'POST',
  path: '/v1/messages/count_tokens',
  summary: "The input tokens of a Messages request: Anthropic's count, or gw's estimate for other providers",
  audience: 'client',
  body: CountTokensBody,
  answer: CountTokensAnswer,
  errorStyle: 'anthropic',
  async plan({ deps, ctx, body, routeOf }) {
    const { input, native } = parseCountTokensInput(withHeaderFields(body.value, ctx.headers), routeOf)
    await applyGatewayHeaders(deps, ctx, input)
    const context = countingContext(ctx)
    // An org with guardrails gets gw's estimate too, of the screened text: Anthropic never reads what they have not (PRODUCT §19).
    if (input.model.provider !== 'anthropic' || ctx.org.org.policy.guardrails?.length)
      return { input, shape: MESSAGES_SHAPE, context, answerHere: (finish) => estimateCount(ctx, input, finish) }
    const counter = anthropicCountTokens(native, ctx.headers)
    return { input, shape: MESSAGES_SHAPE, context, adapters: (p) => (p === 'anthropic' ? counter : undefined), sendsClientBody: true }
  },
}
