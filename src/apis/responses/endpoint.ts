// POST /v1/responses, declared (PRODUCT §12, §16): OpenAI's Responses API; OpenAI relayed, the other
// providers translated. A previous_response_id that gw answered is rebuilt from the log for every
// provider; OpenAI's own ids only OpenAI can continue.

import { adapterFor } from '../../providers/registry'
import { withHeaderFields } from '../../pipeline/chat-input'
import type { EndpointDeclaration } from '../../pipeline/endpoint'
import { applyGatewayHeaders } from '../../pipeline/prompt-input'
import { ResponseAnswer } from '../../schemas/answers'
import { isGwResponse, responsesShape } from './answer'
import { previousTurns } from './history'
import { responsesPassThrough } from './pass-through'
import { parseResponsesInput, ResponsesBody, toChatRequest } from './request'

export const responses: EndpointDeclaration = {
  id: 'createResponse',
  method: 'POST',
  path: '/v1/responses',
  summary: "A response in OpenAI's Responses format from any provider (OpenAI's own answers relayed unchanged)",
  audience: 'client',
  body: ResponsesBody,
  answer: ResponseAnswer,
  streams: true,
  errorStyle: 'openai',
  operation: 'chat',
  listed: true,
  async plan({ deps, ctx, body: raw, routeOf }) {
    const { input, native, body } = parseResponsesInput(withHeaderFields(raw.value, ctx.headers), routeOf)
    await applyGatewayHeaders(deps, ctx, input)
    const previous = body.previous_response_id
    const rebuilt = !!previous && (isGwResponse(previous) || input.model.provider !== 'openai')
    if (previous && rebuilt) input.body = toChatRequest(body, await previousTurns(deps, ctx, previous))
    const openAIState = !!previous && !rebuilt
    const passThrough = responsesPassThrough(native)
    return {
      input,
      shape: responsesShape(body),
      // The OpenAI wire (OpenAI, Azure OpenAI, OpenAI-compatible providers) has the Responses API: passed through.
      adapters: (p) => (p === 'openai' ? (rebuilt ? adapterFor(p) : passThrough) : openAIState ? undefined : adapterFor(p)),
      // A conversation OpenAI keeps (its own previous_response_id) can only be relayed.
      translating: openAIState ? undefined : adapterFor,
      sendsClientBody: true,
    }
  },
}
