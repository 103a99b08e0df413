// An API endpoint declared once (PRODUCT §16): what the runner (src/pipeline/index.ts) takes through the
// stages, and what the HTTP edge, /v1/models, the metrics and the OpenAPI document read. The declarations
// themselves live beside their API in src/apis/ (docs/architecture.md, "How to add an endpoint").

import type { TextSlot } from '../guardrails/guard'
import type { ApiOperation } from '../schemas/api-operation'
import type { AdapterLookup } from './5-fallback'
import type { AnswerShape } from './6-normalise'
import type { Outcome } from './7-log'
import type { RouteResolver } from './chat-input'
import type { AuthedContext, ChatInput, Deps, GenAiOperation, RawBody } from './context'

/** One request of an endpoint, authenticated and with its body read. */
export interface EndpointCall {
  deps: Deps
  ctx: AuthedContext
  body: RawBody
  /** The route's path parameters. */
  params: Record<string, string>
  /** The URL's query, for an endpoint whose declaration has one (`query`). */
  query: URLSearchParams | undefined
  /** The org's routes, each resolved to a target when the request names it (PRODUCT §13). */
  routeOf: RouteResolver
}

/** What the stages run for one request of an endpoint. */
export interface Plan {
  input: ChatInput
  /** The answer's format (stage 6). */
  shape: AnswerShape
  /** The adapter that talks to each provider; default, the chat translators. A provider without one is skipped. */
  adapters?: AdapterLookup
  /**
   * When `adapters` relays the client's own body or the provider's bytes: the adapters that build the
   * request from `input.body` and read the answer into choices, used when the org's guardrails read or
   * change texts (PRODUCT §19). Absent with `adapters` set: such a request cannot be guarded (400).
   */
  translating?: AdapterLookup
  /**
   * The upstream request is built from the client's body as received (pass-through, embeddings), not
   * from `input.body` alone: the response cache keys on that body too.
   */
  sendsClientBody?: true
  /** The texts the org's input guardrails read and may change, for a request with no conversation (embeddings' inputs). */
  texts?: TextSlot[]
  /** The context stage 2 and the dispatch run under, when not the request's own (a count is charged no tokens or cost). */
  context?: AuthedContext
  /** An answer made without an upstream once the policy passed; it ends the request through `finish`. */
  answerHere?: (finish: (o: Outcome) => void) => Promise<Response>
}

export interface EndpointDeclaration extends ApiOperation {
  method: 'POST'
  audience: 'client'
  /** Its name in log entries, metrics and traces when not its path (a path with parameters names its shape). */
  label?: string
  /** What an empty body stands for; undefined, an empty body is a 400. */
  whenEmpty?: unknown
  /** What it asks of a model (GenAI's operation name): the catalog models of that kind list it in /v1/models when `listed`. */
  operation?: GenAiOperation
  /** Named in /v1/models beside each model that serves it. */
  listed?: boolean
  /** The request, parsed and checked, turned into what the stages run. */
  plan(call: EndpointCall): Promise<Plan>
}

export const labelOf = (e: EndpointDeclaration): string => e.label ?? e.path
