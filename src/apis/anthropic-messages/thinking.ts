// The Messages API's `thinking` (and `output_config.effort`) for the providers it is translated to:
// each target's own reasoning control, and its thinking text back as `thinking` blocks where the
// provider gives it. Reference: docs/apis.md ("Thinking on other providers").

import type { ProviderAdapter, ThinkingOptions } from '../../providers/adapter'
import { googleThinking } from '../../providers/google'
import { mistralThinking } from '../../providers/mistral'
import { openai } from '../../providers/openai'
import type { Wire } from '../../providers/provider-id'
import { adapterFor } from '../../providers/registry'
import { isRecord } from '../../providers/upstream-errors'

/** What a Messages request asks of the model's thinking, in the providers' terms. */
export interface MessagesThinking extends ThinkingOptions {
  /** `reasoning_effort`: `output_config.effort` as given, else the band of `budget_tokens`. */
  effort: string | undefined
}

/** Anthropic's `output_config.effort` values (others are Anthropic's to refuse, not sent elsewhere). */
const EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max'])

/** `budget_tokens` → reasoning effort, at the budgets gw gives Gemini for each effort (docs/providers.md). */
function effortBand(budget: number): string {
  if (budget < 4096) return 'low'
  if (budget < 16_384) return 'medium'
  return 'high'
}

/** The request's thinking, or undefined when it asks for none (no `thinking`, `disabled`, no effort). */
export function thinkingOf(body: Record<string, unknown>): MessagesThinking | undefined {
  const th = isRecord(body.thinking) ? body.thinking : undefined
  const oc = isRecord(body.output_config) ? body.output_config : undefined
  const given = typeof oc?.effort === 'string' && EFFORTS.has(oc.effort) ? oc.effort : undefined
  const on = th?.type === 'enabled' || th?.type === 'adaptive'
  if (!on && given === undefined) return undefined
  const budget = th?.type === 'enabled' && typeof th.budget_tokens === 'number' ? th.budget_tokens : undefined
  return {
    effort: given ?? (budget === undefined ? undefined : effortBand(budget)),
    budgetTokens: budget,
    showThinking: on && th?.display !== 'omitted',
  }
}

/** Mistral's efforts stop at `xhigh`. */
const mistralEffort = (effort: string) => (effort === 'max' ? 'xhigh' : effort)

/**
 * The adapter of a non-Anthropic provider for a request with thinking: OpenAI reasoning models get
 * `reasoning_effort` (others nothing: they have no reasoning control); Mistral `reasoning_effort` and its
 * thinking chunks back; Gemini its thinking budget or level with `includeThoughts`, the thoughts back.
 */
export function thinkingAdapter(provider: Wire, t: MessagesThinking): ProviderAdapter {
  const effort = t.effort
  if (provider === 'openai') {
    if (effort === undefined) return openai
    return {
      ...openai,
      buildRequest: (req, target) => openai.buildRequest(target.model.info.reasoning ? { ...req, reasoning_effort: effort } : req, target),
    }
  }
  if (provider === 'mistral' || provider === 'google') {
    const base = provider === 'mistral' ? mistralThinking(t) : googleThinking(t)
    if (effort === undefined) return base
    const reasoning_effort = provider === 'mistral' ? mistralEffort(effort) : effort
    return { ...base, buildRequest: (req, target) => base.buildRequest({ ...req, reasoning_effort }, target) }
  }
  return adapterFor(provider)
}
