// Per-request basics set at the HTTP edge: the request id, arrival time and the JSON body reader.

import { badRequest, GatewayError } from '../errors'
import type { RequestContext } from '../pipeline/context'

interface Arrival {
  id: string
  start: number
  at: Date
}

const arrivals = new WeakMap<Request, Arrival>()

/** Called from onRequest, the one hook that runs for every request (404 and parse errors too). */
export function markArrival(request: Request): string {
  const id = Bun.randomUUIDv7()
  arrivals.set(request, { id, start: performance.now(), at: new Date() })
  return id
}

export function requestIdOf(request: Request): string | undefined {
  return arrivals.get(request)?.id
}

export function contextFor(request: Request, endpoint: string): RequestContext {
  const a = arrivals.get(request) ?? { id: Bun.randomUUIDv7(), start: performance.now(), at: new Date() }
  return {
    requestId: a.id,
    start: a.start,
    receivedAt: a.at,
    endpoint,
    headers: request.headers,
    signal: request.signal,
  }
}

export function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, 'gateway_error', `Request body is larger than the ${limit}-byte limit (GW_MAX_BODY_BYTES)`)
}

/** Reads the body as JSON with our limits and errors (Elysia's own parsing is switched off on these routes). */
export async function readJsonBody(
  request: Request,
  limit: number,
  /** What an empty body stands for; without it an empty body is a 400. */
  emptyAs?: unknown,
): Promise<{ value: unknown; text: string; bytes: number }> {
  const declared = Number(request.headers.get('content-length'))
  if (declared > limit) throw tooLarge(limit)
  const buf = await request.arrayBuffer()
  if (buf.byteLength > limit) throw tooLarge(limit)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf)
  } catch {
    throw badRequest('Request body is not valid UTF-8')
  }
  if (!text.trim()) {
    if (emptyAs !== undefined) return { value: emptyAs, text, bytes: 0 }
    throw badRequest('Request body is empty (expected a JSON object)')
  }
  try {
    return { value: JSON.parse(text), text, bytes: buf.byteLength }
  } catch (err) {
    const type = request.headers.get('content-type')
    if (type && !/json/i.test(type))
      throw badRequest(`Request body must be JSON (Content-Type: application/json), got Content-Type "${type.slice(0, 100)}"`)
    const why = err instanceof RangeError ? 'nested too deeply' : err instanceof Error ? err.message : 'syntax error'
    throw badRequest(`Malformed JSON body: ${why}`)
  }
}
