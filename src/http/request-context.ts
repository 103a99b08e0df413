// Per-request basics set at the HTTP edge: the request id, arrival time, the JSON body reader and the bytes bodies in flight hold.

import { isUtf8 } from 'node:buffer'
import { badRequest, echo, GatewayError } from '../errors'
import { nestsDeeperThan } from '../json-depth'
import type { GenAiOperation, RequestContext } from '../pipeline/context'
import type { ErrorStyle } from '../schemas/api-operation'

interface Arrival {
  id: string
  start: number
  /** Epoch ms. */
  at: number
  /** The error shape of the endpoint the request reached (gw's until a route says otherwise). */
  errorStyle: ErrorStyle
}

const arrivals = new WeakMap<Request, Arrival>()

/** Carries the request id on every answer (PRODUCT §4), set in one place: `withRequestId`, around the app's fetch. */
export const REQUEST_ID_HEADER = 'x-gw-request-id'

type Fetch = (request: Request) => Response | Promise<Response>

/**
 * Wraps the app's fetch (Elysia's `wrap`) so that every answer — routes, errors, 404s, streams —
 * carries the request id its arrival was given, written into the answer's own headers (no copy of the
 * answer, which Elysia makes when a hook sets `set.headers`).
 */
export function withRequestId(fetch: Fetch): Fetch {
  return (request) => {
    const res = fetch(request)
    return res instanceof Promise ? res.then((r) => stamped(r, request)) : stamped(res, request)
  }
}

/**
 * The answer with its request id: `x-gw-request-id`, and the header the endpoint's SDK reads as its
 * request id (Anthropic's `request-id`, else `x-request-id`), so what an SDK shows finds the log entry.
 */
function stamped(res: Response, request: Request): Response {
  const arrival = arrivals.get(request)
  if (arrival === undefined) return res
  const sdkHeader = arrival.errorStyle === 'anthropic' ? 'request-id' : 'x-request-id'
  try {
    res.headers.set(REQUEST_ID_HEADER, arrival.id)
    res.headers.set(sdkHeader, arrival.id)
    return res
  } catch {
    // Headers that cannot change (a fetched answer passed on as it came): a copy that carries it.
    const headers = new Headers(res.headers)
    headers.set(REQUEST_ID_HEADER, arrival.id)
    headers.set(sdkHeader, arrival.id)
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers })
  }
}

/** Called from onRequest, the one hook that runs for every request (404 and parse errors too). */
export function markArrival(request: Request): string {
  const id = Bun.randomUUIDv7()
  arrivals.set(request, { id, start: performance.now(), at: Date.now(), errorStyle: 'gw' })
  return id
}

export function requestIdOf(request: Request): string | undefined {
  return arrivals.get(request)?.id
}

/** How the errors of this request are shaped: its endpoint's style, set when its route took it. */
export function errorStyleOf(request: Request): ErrorStyle {
  return arrivals.get(request)?.errorStyle ?? 'gw'
}

/** The request's context for the endpoint that takes it (`endpoint`: its name in logs and metrics; `api`: what its declaration says). */
export function contextFor(
  request: Request,
  endpoint: string,
  api: { errorStyle: ErrorStyle; operation?: GenAiOperation | undefined } = { errorStyle: 'gw' },
): RequestContext {
  const { errorStyle, operation } = api
  let a = arrivals.get(request)
  if (!a) arrivals.set(request, (a = { id: Bun.randomUUIDv7(), start: performance.now(), at: Date.now(), errorStyle }))
  a.errorStyle = errorStyle
  return {
    requestId: a.id,
    start: a.start,
    receivedAt: a.at,
    method: request.method,
    endpoint,
    errorStyle,
    operation,
    headers: request.headers,
    signal: request.signal,
  }
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, 'gateway_error', `Request body is larger than the ${limit}-byte limit (GW_MAX_BODY_BYTES)`)
}

/** Deepest nesting of arrays and objects a JSON body may have: JSON.parse takes any depth, but
 * JSON.stringify and every recursive walk after it overflow the stack at a depth set by the runtime. */
export const MAX_JSON_DEPTH = 128

/**
 * Bytes of request bodies held by the requests in flight, at most GW_MAX_INFLIGHT_BODY_BYTES
 * together (docs/security.md): a body that does not fit is refused (503) before or as it is read.
 */
export class BodyBudget {
  private used = 0
  constructor(readonly limit: number) {}

  /** Bytes held now (for tests and diagnostics). */
  get held(): number {
    return this.used
  }

  /** A request's share, empty until its body is read. */
  share(): BodyShare {
    return new BodyShare(this)
  }

  /** Counts `n` more bytes, or throws 503 when they do not fit. */
  take(n: number): void {
    if (this.used + n > this.limit)
      throw new GatewayError(503, 'gateway_error', `Request bodies in flight take all ${this.limit} bytes this gateway allows (GW_MAX_INFLIGHT_BODY_BYTES): try again shortly`, {
        headers: { 'retry-after': '1' },
      })
    this.used += n
  }

  give(n: number): void {
    this.used -= n
  }
}

/**
 * The bytes one request's body holds. Its route owns it and releases it in its `finally`; the
 * request's log entry, which keeps the body until a stream ends, is a second owner (`keep`). The
 * bytes go back when the last owner lets go.
 */
export class BodyShare {
  private bytes = 0
  private owners = 1
  constructor(private readonly budget: BodyBudget) {}

  take(n: number): void {
    this.budget.take(n)
    this.bytes += n
  }

  /** One more owner; its release function works once. */
  keep(): () => void {
    this.owners++
    let released = false
    return () => {
      if (released) return
      released = true
      this.release()
    }
  }

  release(): void {
    if (--this.owners > 0) return
    this.budget.give(this.bytes)
    this.bytes = 0
  }
}

/**
 * The body's bytes, never more than `limit`, each counted on `share` before it is held: a declared
 * Content-Length is checked and counted up front (Bun then holds the body to it); a chunked body is
 * read piece by piece, counted as it arrives and refused as soon as it passes the limit.
 */
async function readCapped(request: Request, limit: number, share: BodyShare | undefined): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    const n = Number(declared)
    if (n > limit) throw tooLarge(limit)
    // Bun's parser refuses a Content-Length that is not a number; 0 keeps the count sound regardless.
    share?.take(Number.isSafeInteger(n) && n > 0 ? n : 0)
    return new Uint8Array(await request.arrayBuffer())
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body ?? []) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    share?.take(chunk.byteLength)
    chunks.push(chunk)
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks)
}

/** Why a non-JSON body failed, naming a Content-Type that says it was never meant to be JSON. */
function malformed(request: Request, err: unknown): GatewayError {
  const why = err instanceof RangeError ? 'nested too deeply' : err instanceof Error ? err.message : 'syntax error'
  const type = request.headers.get('content-type')?.split(';')[0]?.trim()
  const hint = type && !/json/i.test(type) ? ` (sent as ${echo(type)}; expected Content-Type: application/json)` : ''
  return badRequest(`Malformed JSON body: ${why}${hint}`)
}

/** Reads the body as JSON with our limits and errors (Elysia's own parsing is switched off on these routes). */
export async function readJsonBody(
  request: Request,
  limit: number,
  /** What an empty body stands for; without it an empty body is a 400. */
  emptyAs?: unknown,
  /** Where the body's bytes are counted while the request runs (pipeline requests). */
  share?: BodyShare,
  /** Bytes of JSON text to return: a larger body's text is only its first `textUpTo` bytes (a log preview). */
  textUpTo = Number.POSITIVE_INFINITY,
): Promise<{ value: unknown; text: string; bytes: number }> {
  const buf = await readCapped(request, limit, share)
  if (!isUtf8(buf)) throw badRequest('Request body is not valid UTF-8')
  if (isBlank(buf)) {
    // Its text is the value's: the log stores the body as the JSON it stands for.
    if (emptyAs !== undefined) return { value: emptyAs, text: JSON.stringify(emptyAs), bytes: 0 }
    throw badRequest('Request body is empty (expected a JSON object)')
  }
  // A body whose whole text is kept is parsed from that text; a larger one from its bytes, so no
  // whole-body string, about as large as the body itself, is made beside the parsed value.
  const whole = buf.byteLength <= textUpTo
  const text = utf8Prefix(buf, textUpTo)
  let value: unknown
  try {
    value = whole ? JSON.parse(text) : await new Response(buf as Uint8Array<ArrayBuffer>).json()
  } catch (err) {
    throw malformed(request, err)
  }
  // Nesting deeper than the limit takes two characters per level: a shorter body cannot (most bodies).
  if (buf.byteLength > 2 * MAX_JSON_DEPTH && nestsDeeperThan(value, MAX_JSON_DEPTH))
    throw badRequest(`Request body nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep`)
  return { value, text, bytes: buf.byteLength }
}

/** True when the body holds only JSON whitespace (looks no further than the first other byte). */
function isBlank(buf: Uint8Array): boolean {
  for (const b of buf) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return false
  return true
}

/** Decodes validated UTF-8 (a leading byte-order mark dropped, as JSON parsers expect). */
const utf8 = new TextDecoder()

/** The text of at most the first `max` bytes of valid UTF-8, cut on a character boundary. */
function utf8Prefix(buf: Uint8Array, max: number): string {
  let end = Math.min(max, buf.byteLength)
  while (end > 0 && end < buf.byteLength && ((buf[end] as number) & 0xc0) === 0x80) end--
  return utf8.decode(end === buf.byteLength ? buf : buf.subarray(0, end))
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
