// count_tokens for a model that is not Anthropic's: gw's tokenizer counts, the answer says it is an
// estimate (`x-gw-estimated: true`), and the request is logged like any other.

import { GatewayError } from '../../errors'
import type { AuthedContext, ChatInput, Deps } from '../../pipeline/context'
import { failureOutcome, recordRequest } from '../../pipeline/7-log'
import { modelUnavailable } from '../../policy/model-access'
import { countPromptTokens } from '../../policy/prompt-tokens'

export async function estimateCount(deps: Deps, ctx: AuthedContext, input: ChatInput): Promise<Response> {
  const why = modelUnavailable(ctx.org, input.model)
  if (why) {
    const e = new GatewayError(403, 'model_not_allowed', `Model not allowed: ${why}`)
    recordRequest(deps, ctx, input, failureOutcome(e.status, e.code, e.message))
    throw e
  }
  const tokens = await countPromptTokens(input.body.messages)
  const body = { input_tokens: tokens }
  recordRequest(deps, ctx, input, {
    ...failureOutcome(200, '', ''),
    errorCode: null,
    errorMessage: null,
    model: input.model.name,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    usageEstimated: true,
    responseBody: body,
  })
  return new Response(JSON.stringify(body), {
    headers: {
      'content-type': 'application/json',
      'x-gw-request-id': ctx.requestId,
      'x-gw-model': input.model.name,
      'x-gw-auth-mode': ctx.identity.authMode,
      'x-gw-estimated': 'true',
    },
  })
}
