// POST /v1/chat/completions, declared (PRODUCT §16): OpenAI's chat format in and out, from every provider.

import { parseChatInput, withHeaderFields } from '../../pipeline/chat-input'
import type { EndpointDeclaration } from '../../pipeline/endpoint'
import { applyGatewayHeaders } from '../../pipeline/prompt-input'
import { ChatCompletionAnswer } from '../../schemas/answers'
import { ChatBody } from '../../schemas/chat-body'
import { chatShape } from './answer'
import { CHAT_ADAPTERS } from './chunk-pass'

export const chatCompletions: EndpointDeclaration = {
  id: 'createChatCompletion',
  method: 'POST',
  path: '/v1/chat/completions',
  summary: "A chat completion in OpenAI's format from any provider, streamed or not, with fallbacks and structured output",
  audience: 'client',
  body: ChatBody,
  answer: ChatCompletionAnswer,
  streams: true,
  errorStyle: 'gw',
  operation: 'chat',
  listed: true,
  async plan({ deps, ctx, body, routeOf }) {
    const input = await applyGatewayHeaders(deps, ctx, parseChatInput(withHeaderFields(body.value, ctx.headers), routeOf))
    return { input, shape: chatShape(input.body.stream_options?.include_usage === true), ...CHAT_ADAPTERS }
  },
}
