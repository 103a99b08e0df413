// How a request's answer travels, chosen once per request, here: relayed as the upstream sent it (a provider that speaks the client's format) or parsed and rebuilt (translation, guardrails).

import { GatewayError } from '../errors'
import type { Guard } from '../guardrails/guard'
import { guardedTransform } from '../guardrails/stream'
import type { AdapterLookup } from './5-fallback'
import type { PartsTransform } from './6-normalise'
import type { ChatInput } from './context'
import type { Plan } from './endpoint'

/**
 * `relay`: the plan's adapters as declared; where one speaks the client's format (Anthropic on
 * `/v1/messages`, OpenAI on `/v1/responses`), its stream's bytes go to the client as received and gw
 * parses the events only to act on them (the commit point, usage, the finish, errors; the log's text
 * is read on the log thread); OpenAI chat to chat clients takes its light pass (model renamed, whole
 * text chunks unparsed). `parse`: every event
 * is parsed, translated into choices and rebuilt by the endpoint's encoder, through `transform` when a
 * stage changes the text on its way (the guardrails of PRODUCT §19).
 */
export interface StreamPath {
  kind: 'relay' | 'parse'
  adapters: AdapterLookup | undefined
  transform?: PartsTransform
}

/**
 * The one place the choice is made, from the endpoint's plan (its declaration's adapters) and the org's
 * settings. Today only the guardrails need the parsing path: they read and change the texts, so the
 * request goes through the translating adapters (its input screened first). A new stage that must read
 * or change the answer's text adds its condition here (docs/architecture.md, "Stream paths").
 */
export async function chooseStreamPath(plan: Plan, input: ChatInput, guard: Guard | undefined, signal: AbortSignal): Promise<StreamPath> {
  if (!guard) return { kind: 'relay', adapters: plan.adapters }
  // Embeddings: their adapters send the inputs the guardrails leave; the answer (vectors) has no text.
  if (plan.texts) {
    await guard.screenTexts(plan.texts, signal)
    return { kind: 'relay', adapters: plan.adapters }
  }
  if (plan.adapters && !plan.translating)
    throw new GatewayError(400, 'policy_violation', "This request cannot be read by the org's guardrails (a conversation the provider keeps): send the whole conversation")
  await guard.screenInput(input.body, signal)
  const adapters = plan.translating ?? plan.adapters
  return guard.readsAnswer ? { kind: 'parse', adapters, transform: guardedTransform(guard, signal) } : { kind: 'parse', adapters }
}
