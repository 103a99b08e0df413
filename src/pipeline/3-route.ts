// Stage 3: resolve each model of the request (primary, then the fallback chain) to an upstream target.

import type { FailureKind, Target } from '../providers/adapter'
import type { ChatInput, Deps, ModelRef, OrgContext } from './context'
import { modelUnavailable } from '../policy/model-access'

export interface Candidate {
  ref: ModelRef
  /** Undefined when the org cannot use this model; `unavailable` says why. */
  target: Target | undefined
  unavailable: string | undefined
  /** Chain entries only: the failure kinds it fires on (undefined = all but refusal_detected). */
  triggers: FailureKind[] | undefined
}

function toCandidate(deps: Deps, org: OrgContext, ref: ModelRef, stream: boolean, triggers?: FailureKind[]): Candidate {
  const unavailable = modelUnavailable(org, ref)
  const rec = org.providers.get(ref.provider)
  const target: Target | undefined =
    unavailable || !rec
      ? undefined
      : {
          provider: ref.provider,
          model: deps.catalog.resolve(ref.provider, ref.id),
          baseUrl: rec.baseUrl ?? deps.config.baseUrls[ref.provider],
          apiKey: rec.apiKey,
          stream,
        }
  return { ref, target, unavailable, triggers }
}

export function route(deps: Deps, org: OrgContext, input: ChatInput): Candidate[] {
  return [
    toCandidate(deps, org, input.model, input.stream),
    ...input.fallbackChain.map((e) => toCandidate(deps, org, e.model, input.stream, e.triggers)),
  ]
}
