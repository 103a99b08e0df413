// Tool-call id schemes: ids each provider accepts, and Gemini thought signatures carried inside ids.
//
// Providers disagree on what a tool-call id may look like (OpenAI: at most 40 characters; Anthropic:
// [a-zA-Z0-9_-]; Mistral: exactly 9 alphanumerics), and a conversation may move between them (fallback,
// a client switching models). Ids a provider would refuse are replaced by a stable hash of themselves:
// the assistant's tool_calls[].id and the tool message's tool_call_id map to the same value, so the
// call and its result still pair up, and no state has to be kept between requests.

import { createHash } from 'node:crypto'

const BASE62 = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** `length` base62 characters derived from `text` (SHA-256), the same every time. */
export function stableHash(text: string, length: number): string {
  const digest = createHash('sha256').update(text).digest()
  let out = ''
  for (let i = 0; out.length < length; i++) out += BASE62[(digest[i % digest.length] ?? 0) % 62]
  return out
}

/** Keeps ids that fit `max` characters and `allowed`; replaces the others by `prefix` + a stable hash. */
export function fitToolId(id: string, max: number, allowed: RegExp, prefix = 'call_'): string {
  if (id.length > 0 && id.length <= max && allowed.test(id)) return id
  return prefix + stableHash(id, Math.min(32, max - prefix.length))
}

// Gemini 3+ attaches an opaque `thoughtSignature` to function calls and refuses the next turn unless it
// comes back on the same call. OpenAI clients only echo the tool call, so the signature travels inside
// its id: `call_<8 random base62>` when there is none, `call_<8 random base62>_ts_<signature, base64url>`
// when there is one. The base64url alphabet keeps the id valid for Anthropic if the conversation moves.

const SIGNED_ID = /^call_[A-Za-z0-9]{8}_ts_([A-Za-z0-9_-]+)$/

export function geminiToolId(thoughtSignature: string | undefined): string {
  const head = `call_${stableHash(crypto.randomUUID(), 8)}`
  if (!thoughtSignature) return head
  const b64url = thoughtSignature.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  return `${head}_ts_${b64url}`
}

/** The thought signature a Gemini tool-call id carries (standard base64, as Gemini sent it), if any. */
export function thoughtSignatureOf(id: string): string | undefined {
  const m = SIGNED_ID.exec(id)
  if (!m?.[1]) return undefined
  const b64 = m[1].replace(/-/g, '+').replace(/_/g, '/')
  return b64 + '='.repeat((4 - (b64.length % 4)) % 4)
}
