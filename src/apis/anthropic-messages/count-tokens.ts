// count_tokens (POST /v1/messages/count_tokens): the policy a count runs under, and gw's own estimate for
// a model that is not Anthropic's (`x-gw-estimated: true`), settled like any other request (through
// the request's Settlement). Reference: docs/apis.md ("count_tokens").

import type { AuthedContext, ChatInput } from '../../pipeline/context'
import { answeredOutcome, type Outcome } from '../../pipeline/7-log'

/**
 * The request's context as a count sees it, whatever the provider: the org's policy (allowed models,
 * required metadata, blocked terms) and its request rates (the org's and the key's) apply; the token
 * rates, the prompt-token limit and the budgets do not — a count generates nothing, so it is charged
 * no tokens and no cost, and a prompt too long to send may still be counted.
 */
export function countingContext(ctx: AuthedContext): AuthedContext {
  const { tokensPerMinute: _t, maxPromptTokens: _p, budgets: _b, ...policy } = ctx.org.org.policy
  const keyLimits = ctx.identity.keyLimits && { requestsPerMinute: ctx.identity.keyLimits.requestsPerMinute }
  return {
    ...ctx,
    identity: { ...ctx.identity, keyLimits },
    org: { ...ctx.org, org: { ...ctx.org.org, policy } },
  }
}

/** gw's tokenizer count of a request for a model that is not Anthropic's; the policy has been applied. */
export async function estimateCount(ctx: AuthedContext, input: ChatInput, record: (o: Outcome) => void): Promise<Response> {
  const body = { input_tokens: await input.view.countPromptTokens({ signal: ctx.signal }) }
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
      'x-gw-model': input.model.name,
      'x-gw-auth-mode': ctx.identity.authMode,
      'x-gw-estimated': 'true',
    },
  })
}
