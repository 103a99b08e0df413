// Maps every failure (ours, Elysia's, unexpected ones) to the seed's error body with a request id.

import { errorBodyFor } from '../apis/error-shapes'
import { badRequest, type ErrorShape, GatewayError, notFound } from '../errors'
import { StoreConflictError, StoreUnavailableError } from '../store/errors'
import { errorStyleOf, requestIdOf } from './request-context'

export function errorResponse(err: unknown, request: Request, shape: ErrorShape | undefined, elysiaCode?: string | number): Response {
  const requestId = requestIdOf(request) ?? Bun.randomUUIDv7()
  let e: GatewayError
  if (err instanceof GatewayError) e = err
  else if (elysiaCode === 'NOT_FOUND') e = notFound(`No route for ${request.method} ${new URL(request.url).pathname}`)
  else if (elysiaCode === 'PARSE') e = badRequest('Malformed request body')
  else if (elysiaCode === 'VALIDATION') e = badRequest(err instanceof Error ? err.message : 'Invalid request')
  // Two admin requests creating the same record at once: the check-then-insert lost the race.
  else if (err instanceof StoreConflictError)
    e = new GatewayError(409, 'gateway_error', `Already exists (created by a concurrent request): ${err.message}`)
  else if (err instanceof StoreUnavailableError)
    e = new GatewayError(503, 'gateway_error', 'The database is unreachable; try again shortly', { headers: { 'retry-after': '1' } })
  else {
    console.error(`gw: unexpected error in request ${requestId}:`, err instanceof Error ? err.stack : err)
    e = new GatewayError(500, 'gateway_error', 'Internal error')
  }
  return new Response(JSON.stringify(errorBodyFor(errorStyleOf(request), request.headers, e, requestId, shape)), {
    status: e.status,
    headers: { 'content-type': 'application/json', ...e.headers },
  })
}
