// Stage 2: enforce the org's policy on the request before anything is sent upstream.

import { GatewayError } from '../errors'
import { modelUnavailable } from '../policy/model-access'
import type { ChatInput, OrgContext } from './context'

export function enforcePolicy(org: OrgContext, input: ChatInput): void {
  const why = modelUnavailable(org, input.model)
  if (why) throw new GatewayError(403, 'model_not_allowed', `Model not allowed: ${why}`)
}
