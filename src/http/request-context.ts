// Per-request basics set at the HTTP edge: the request id, arrival time and the JSON body reader.

import { badRequest, GatewayError } from '../errors'
import { nestsDeeperThan } from '../json-depth'
import type { RequestContext } from '../pipeline/context'

interface Arrival {
  id: string
  start: number
  /** Epoch ms. */
  at: number
}

const arrivals = new WeakMap<Request, Arrival>()

/** Called from onRequest, the one hook that runs for every request (404 and parse errors too). */
export function markArrival(request: Request): string {
  const id = Bun.randomUUIDv7()
  arrivals.set(request, { id, start: performance.now(), at: Date.now() })
  return id
}

export function requestIdOf(request: Request): string | undefined {
  return arrivals.get(request)?.id
}

export function contextFor(request: Request, endpoint: string): RequestContext {
  const a = arrivals.get(request) ?? { id: Bun.randomUUIDv7(), start: performance.now(), at: Date.now() }
  return {
    requestId: a.id,
    start: a.start,
    receivedAt: a.at,
    method: request.method,
    endpoint,
    headers: request.headers,
    signal: request.signal,
  }
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, 'gateway_error', `Request body is larger than the ${limit}-byte limit (GW_MAX_BODY_BYTES)`)
}

/** Deepest nesting of arrays and objects a JSON body may have: JSON.parse takes any depth, but
 * JSON.stringify and every recursive walk after it overflow the stack somewhere past ~10k levels. */
export const MAX_JSON_DEPTH = 128

/**
 * The body's bytes, never more than `limit`: a declared Content-Length is checked up front (Bun then
 * holds the body to it); a chunked body is read piece by piece and refused as soon as it passes the limit.
 */
async function readCapped(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(limit)
    return new Uint8Array(await request.arrayBuffer())
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body ?? []) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/** Why a non-JSON body failed, naming a Content-Type that says it was never meant to be JSON. */
function malformed(request: Request, err: unknown): GatewayError {
  const why = err instanceof RangeError ? 'nested too deeply' : err instanceof Error ? err.message : 'syntax error'
  const type = request.headers.get('content-type')?.split(';')[0]?.trim()
  const hint = type && !/json/i.test(type) ? ` (sent as ${type.slice(0, 100)}; expected Content-Type: application/json)` : ''
  return badRequest(`Malformed JSON body: ${why}${hint}`)
}

/** Reads the body as JSON with our limits and errors (Elysia's own parsing is switched off on these routes). */
export async function readJsonBody(
  request: Request,
  limit: number,
  /** What an empty body stands for; without it an empty body is a 400. */
  emptyAs?: unknown,
): Promise<{ value: unknown; text: string; bytes: number }> {
  const buf = await readCapped(request, limit)
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
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw malformed(request, err)
  }
  // Nesting deeper than the limit takes two characters per level: a shorter text cannot (most bodies).
  if (text.length > 2 * MAX_JSON_DEPTH && nestsDeeperThan(value, MAX_JSON_DEPTH))
    throw badRequest(`Request body nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep`)
  return { value, text, bytes: buf.byteLength }
}

/** A cookie's value from the Cookie header. */
export function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** False when the browser says the request comes from a page of another origin (Origin vs Host). */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin')
  if (origin === null) return true
  try {
    return new URL(origin).host === (request.headers.get('host') ?? new URL(request.url).host)
  } catch {
    return false
  }
}
