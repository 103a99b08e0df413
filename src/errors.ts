// The one error type of gw, its closed code vocabulary, and the outward error body.

export type ErrorCode =
  | 'gateway_error'
  | 'unauthorized'
  | 'forbidden'
  | 'policy_violation'
  | 'rate_limit_exceeded'
  | 'model_not_allowed'
  | 'token_limit_exceeded'
  | 'budget_exceeded'
  | 'provider_error'

export interface ErrorBody {
  error: true
  code: ErrorCode
  message: string
  requestId: string
}

export interface GatewayErrorOptions {
  cause?: unknown
  /** Extra response headers (e.g. `retry-after`). */
  headers?: Record<string, string>
}

/**
 * Every failure gw reports to a client is a GatewayError: HTTP status, code from the seed's
 * vocabulary, and a human-readable message. Messages must never contain secrets.
 */
export class GatewayError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly headers: Record<string, string> | undefined

  constructor(status: number, code: ErrorCode, message: string, opts: GatewayErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'GatewayError'
    this.status = status
    this.code = code
    this.headers = opts.headers
  }

  toBody(requestId: string): ErrorBody {
    return { error: true, code: this.code, message: this.message, requestId }
  }
}

export const badRequest = (message: string) => new GatewayError(400, 'gateway_error', message)
export const notFound = (message: string) => new GatewayError(404, 'gateway_error', message)
export const unauthorized = (message: string) => new GatewayError(401, 'unauthorized', message)
