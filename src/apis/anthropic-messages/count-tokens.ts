// count_tokens for a model that is not Anthropic's: gw's tokenizer counts, the answer says it is an
// estimate (`x-gw-estimated: true`), and the request is recorded like any other (through `record`).

import { GatewayError } from '../../errors'
import type { AuthedContext, ChatInput } from '../../pipeline/context'
import { answeredOutcome, failureOutcome, type Outcome } from '../../pipeline/7-log'
import { modelUnavailable } from '../../policy/model-access'
import { countPromptTokens } from '../../policy/prompt-tokens'

export async function estimateCount(ctx: AuthedContext, input: ChatInput, record: (o: Outcome) => void): Promise<Response> {
  const why = modelUnavailable(ctx.org, input.model)
  if (why) {
    const e = new GatewayError(403, 'model_not_allowed', `Model not allowed: ${why}`)
    record(failureOutcome(e.status, e.code, e.message))
    throw e
  }
  const body = { input_tokens: await countPromptTokens(input.body, { signal: ctx.signal }) }
  // Counting is free: the entry has no usage or cost, only the answer.
  record({
    ...answeredOutcome(200),
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
