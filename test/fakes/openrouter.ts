// Fake OpenRouter (`/api/v1`): OpenAI's chat wire as the OpenAI fake speaks it, with OpenRouter's usage accounting per its
// reference (https://openrouter.ai/docs/use-cases/usage-accounting): `usage.cost` (what the request was charged, in USD
// credits) and `usage.cost_details` on a non-streamed answer and on a stream's usage chunk (the last one before `[DONE]`).

import { openai } from './openai.ts'
import type { ProviderImpl } from './types.ts'

type Obj = Record<string, unknown>

/** What the fake charges: USD per token, input and output (a made-up model's price, not the catalog's). */
export const OPENROUTER_PRICE = { input: 0.000003, output: 0.000015 }

/** The charge for a usage object, as OpenRouter reports it (rounded to 1e-9 USD, as its answers are). */
export const openRouterCost = (promptTokens: number, completionTokens: number): number =>
  Math.round((promptTokens * OPENROUTER_PRICE.input + completionTokens * OPENROUTER_PRICE.output) * 1e9) / 1e9

function withCost(usage: Obj): Obj {
  const cost = openRouterCost(Number(usage.prompt_tokens), Number(usage.completion_tokens))
  return { ...usage, cost, is_byok: false, cost_details: { upstream_inference_cost: null } }
}

export const openrouter: ProviderImpl = {
  ...openai,
  basePath: '/api/v1',

  route: (method, url) => (method === 'POST' && url.pathname === '/api/v1/chat/completions' ? {} : undefined),

  complete(r, ctx) {
    const reply = openai.complete(r, ctx)
    const body = JSON.parse(reply.body as string) as Obj
    if (body.usage && typeof body.usage === 'object') body.usage = withCost(body.usage as Obj)
    return { ...reply, body: JSON.stringify(body) }
  },

  stream(r, ctx) {
    const plan = openai.stream(r, ctx)
    const events = plan.events.map((e) => {
      if (!e.includes('"usage":{')) return e
      const chunk = JSON.parse(e.slice('data: '.length)) as Obj
      return `data: ${JSON.stringify({ ...chunk, usage: withCost(chunk.usage as Obj) })}\n\n`
    })
    return { ...plan, events }
  },
}
