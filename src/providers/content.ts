// Reading OpenAI message content for providers with their own content model: text, and images as
// inline data (data: URLs) or links (http URLs).

import { badRequest, echo } from '../errors'
import type { ChatMessage, ChatRequest, ContentPart } from './openai-types'
import { isRecord } from './upstream-errors'

export type ImageSource =
  | { kind: 'inline'; mediaType: string; data: string }
  | { kind: 'link'; url: string; mediaType: string | undefined }

/**
 * A content item a non-OpenAI provider can carry; `cache` is the part's own `cache_control` (Anthropic's
 * prompt-cache breakpoint, which a chat client may set on a part: PRODUCT §19), for the adapters that send it.
 */
export type Piece = ({ kind: 'text'; text: string } | { kind: 'image'; source: ImageSource }) & { cache?: Record<string, unknown> }

/** A part's or a message's `cache_control`, when it is an object. */
export const cacheControlOf = (x: object): Record<string, unknown> | undefined => {
  const c = (x as { cache_control?: unknown }).cache_control
  return isRecord(c) ? c : undefined
}

const EXTENSION_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
}

/** `data:<type>;base64,<data>` → inline data; `http(s)://…` → a link (media type guessed from the extension). */
export function imageSource(url: string, provider: string): ImageSource {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url)
  if (data?.[1] && data[2] !== undefined) return { kind: 'inline', mediaType: data[1], data: data[2] }
  const link = /^https?:\/\//i.test(url) ? URL.parse(url) : null
  if (link) {
    const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(link.pathname)?.[1]?.toLowerCase()
    return { kind: 'link', url, mediaType: ext ? EXTENSION_TYPES[ext] : undefined }
  }
  throw badRequest(`Unsupported image_url for ${provider}: expected a data: URL (base64) or an http(s) URL`)
}

function piece(part: ContentPart, provider: string, role: string): Piece {
  const p = pieceOf(part, provider, role)
  const cache = cacheControlOf(part)
  return cache ? { ...p, cache } : p
}

function pieceOf(part: ContentPart, provider: string, role: string): Piece {
  if (part.type === 'text' && typeof part.text === 'string') return { kind: 'text', text: part.text }
  if (part.type === 'image_url' && role === 'user' && isRecord(part.image_url) && typeof part.image_url.url === 'string')
    return { kind: 'image', source: imageSource(part.image_url.url, provider) }
  throw badRequest(`Content part type ${echo(part.type)} in a ${role} message is not supported for ${provider}`)
}

/** The message's content as pieces; empty text is left out (Anthropic and Gemini refuse it). */
export function pieces(m: ChatMessage, provider: string): Piece[] {
  const c = m.content
  if (typeof c === 'string') return c ? [{ kind: 'text', text: c }] : []
  if (!Array.isArray(c)) return []
  return c.map((p) => piece(p, provider, m.role)).filter((p) => p.kind !== 'text' || p.text !== '')
}

/** The text of a message (system, developer, assistant, tool): string content, or its text parts one per line. */
export function textOf(m: ChatMessage, provider: string): string {
  return pieces(m, provider)
    .map((p) => (p.kind === 'text' ? p.text : ''))
    .join('\n')
}

/**
 * A conversation of system (or developer) messages only, which OpenAI answers as its instructions:
 * Anthropic, Gemini, Mistral and Bedrock need a user turn, so their text is sent as one
 * (docs/providers.md, "Common rules").
 */
export function withUserTurn(req: ChatRequest, provider: string): ChatRequest {
  if (req.messages.some((m) => m.role !== 'system' && m.role !== 'developer')) return req
  const text = req.messages.map((m) => textOf(m, provider)).filter(Boolean).join('\n\n')
  return text ? { ...req, messages: [{ role: 'user', content: text }] } : req
}
