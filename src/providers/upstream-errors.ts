// Helpers adapters share to read upstream answers: JSON within a depth bound, error answers turned into failure kinds.

import { parseJsonWithin } from '../json-depth'
import type { FailureKind, UpstreamFailure } from './adapter'

/** `retry-after-ms`, `retry-after` (seconds or HTTP date) → milliseconds. */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms'))
  if (Number.isFinite(ms) && ms > 0) return ms
  const raw = headers.get('retry-after')
  if (!raw) return undefined
  const secs = Number(raw)
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000
  const at = Date.parse(raw)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** The kind every provider shares for a status: 429 is a rate limit, anything else a provider error. */
export function kindForStatus(status: number): FailureKind {
  return status === 429 ? 'rate_limit' : 'provider_error'
}

/**
 * Deepest nesting an upstream answer or stream event may have (docs/security.md): far beyond any real
 * answer, well below where JSON.stringify and other recursive code overflow the stack.
 */
export const MAX_UPSTREAM_JSON_DEPTH = 1_000

/** An upstream answer's JSON; throws when it is not JSON or nests deeper than MAX_UPSTREAM_JSON_DEPTH. */
export function parseUpstreamJson(text: string): unknown {
  return parseJsonWithin(text, MAX_UPSTREAM_JSON_DEPTH)
}

/** An upstream text's JSON, or undefined when it is not JSON or nests deeper than MAX_UPSTREAM_JSON_DEPTH. */
export function parseJson(text: string): unknown {
  try {
    return parseUpstreamJson(text)
  } catch {
    return undefined
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Shortens upstream text for messages and logs. */
export function clip(text: string, max = 500): string {
  const t = text.trim()
  return t.length > max ? `${t.slice(0, max)}…` : t
}

export function failure(
  status: number,
  message: string,
  headers: Headers,
  kind: FailureKind = kindForStatus(status),
): UpstreamFailure {
  const retry = status === 429 ? retryAfterMs(headers) : undefined
  return retry === undefined ? { kind, status, message } : { kind, status, message, retryAfterMs: retry }
}
