// Every API endpoint gw serves through the stages, each declared once beside its API (PRODUCT §16).
// Adding one: a folder in src/apis/ with its declaration, and one line here (docs/architecture.md).

import type { GenAiOperation } from '../pipeline/context'
import type { EndpointDeclaration } from '../pipeline/endpoint'
import { countTokens, messages } from './anthropic-messages/endpoint'
import { chatCompletions } from './chat/endpoint'
import { embeddings } from './embeddings/endpoint'
import { promptRun } from './prompts/endpoint'
import { responses } from './responses/endpoint'

export const ENDPOINTS: readonly EndpointDeclaration[] = [chatCompletions, promptRun, messages, countTokens, responses, embeddings]

/** The paths /v1/models names beside a model (or a route, whose provider varies): the listed endpoints of its kind (no embeddings from Anthropic). */
export function endpointsServing(kind: GenAiOperation, provider?: string): string[] {
  if (kind === 'embeddings' && provider === 'anthropic') return []
  return ENDPOINTS.filter((e) => e.listed && e.operation === kind).map((e) => e.path)
}
