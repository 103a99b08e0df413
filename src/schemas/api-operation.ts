// One operation of gw's HTTP API as the OpenAPI document (PRODUCT §16) describes it: what every
// endpoint declaration and admin route states about itself.

import type { TSchema } from '@sinclair/typebox'

/** How an operation's errors are shaped: gw's (or OpenAI's on request, PRODUCT §4), Anthropic's, or OpenAI's always (Responses). */
export type ErrorStyle = 'gw' | 'anthropic' | 'openai'

/** Who may call it: a client credential of an org (GwKey, GwSigned, OIDC Bearer), the admin token, or anyone. */
export type Audience = 'client' | 'admin' | 'public'

export interface ApiOperation {
  /** The OpenAPI operationId: unique, camelCase. */
  id: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** The route as the router takes it, `:name` for a path parameter. */
  path: string
  summary: string
  audience: Audience
  /** The request body's schema; undefined when it takes none. */
  body?: TSchema
  /** Query parameters, as one object schema of optional strings. */
  query?: TSchema
  /** The answer's schema (status 200, or `status`). */
  answer?: TSchema
  /** The success status when not 200 (201 for creations, 204 for deletions). */
  status?: number
  /** Another status answered with the answer's schema, and why (the health checks' 503 when down). */
  alsoAnswers?: { status: number; description: string }
  /** Answers as a stream of server-sent events when the body asks for it. */
  streams?: boolean
  errorStyle: ErrorStyle
}
