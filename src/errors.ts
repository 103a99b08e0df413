// The one error type of gw, its closed code vocabulary, and the outward error body.

import type { Static } from '@sinclair/typebox'
import type { GwErrorAnswer, OpenAiErrorAnswer } from './schemas/answers'
import type { Problem } from './schemas/problems'

/** The closed code vocabulary (PRODUCT §5). */
export const ERROR_CODES = [
  'gateway_error',
  'unauthorized',
  'forbidden',
  'policy_violation',
  'rate_limit_exceeded',
  'model_not_allowed',
  'token_limit_exceeded',
  'budget_exceeded',
  'provider_error',
  'guardrail_blocked',
] as const
export type ErrorCode = (typeof ERROR_CODES)[number]

/** The seed's error body; its schema is in src/schemas/answers.ts. */
export type ErrorBody = Static<typeof GwErrorAnswer>

/** The same error in OpenAI's shape (GW_ERROR_FORMAT=openai), which the OpenAI SDKs can print. */
export type OpenAiErrorBody = Static<typeof OpenAiErrorAnswer>

/** `gw` (the seed's shape) or `openai`; the same names as the Config's ErrorFormat. */
export type ErrorShape = 'gw' | 'openai'

/**
 * Which shape a request's errors take: its `x-gw-error-format` header, else GW_ERROR_FORMAT when set,
 * else OpenAI's for the official OpenAI SDKs (they send `x-stainless-lang`) and gw's for the rest (PRODUCT §4).
 */
export function errorShapeFor(headers: Headers, configured: ErrorShape | undefined): ErrorShape {
  const asked = headers.get('x-gw-error-format')?.trim().toLowerCase()
  if (asked === 'openai' || asked === 'gw') return asked
  return configured ?? (headers.has('x-stainless-lang') ? 'openai' : 'gw')
}

export interface GatewayErrorOptions {
  cause?: unknown
  /** Extra response headers (e.g. `retry-after`). */
  headers?: Record<string, string>
  /** What a 429 from gw's own rate limits applied to (`org` or `key`), for the metrics. */
  scope?: string
  /** The provider refused the caller's request itself (a *request* failure, PRODUCT §4a). */
  requestRefused?: boolean
  /** A 400 from a check: the fields at fault, as JSON Pointers (src/schemas/problems.ts); never in the body. */
  problems?: Problem[]
}

/**
 * Every failure gw reports to a client is a GatewayError: HTTP status, code from the seed's
 * vocabulary, and a human-readable message. Messages must never contain secrets.
 */
export class GatewayError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly headers: Record<string, string> | undefined
  readonly scope: string | undefined
  readonly requestRefused: boolean
  readonly problems: Problem[] | undefined

  constructor(status: number, code: ErrorCode, message: string, opts: GatewayErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'GatewayError'
    this.status = status
    this.code = code
    this.headers = opts.headers
    this.scope = opts.scope
    this.requestRefused = opts.requestRefused ?? false
    this.problems = opts.problems
  }

  toBody(requestId: string, shape: ErrorShape = 'gw', type: OpenAiErrorBody['error']['type'] = this.code): ErrorBody | OpenAiErrorBody {
    if (shape === 'openai') return { error: { message: this.message, type, code: this.code, param: null }, requestId }
    return { error: true, code: this.code, message: this.message, requestId }
  }
}

/** Most characters of a client-sent value an error message repeats (PRODUCT §4). */
const ECHO_CHARS = 64

/** A client-sent value quoted for an error message: JSON-quoted, cut to ECHO_CHARS with an ellipsis. */
export function echo(value: unknown): string {
  const s = String(value)
  return JSON.stringify(s.length > ECHO_CHARS ? `${s.slice(0, ECHO_CHARS)}…` : s)
}

export const badRequest = (message: string, opts?: GatewayErrorOptions) => new GatewayError(400, 'gateway_error', message, opts)
export const notFound = (message: string) => new GatewayError(404, 'gateway_error', message)
export const unauthorized = (message: string) => new GatewayError(401, 'unauthorized', message)
