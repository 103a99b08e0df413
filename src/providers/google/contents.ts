// OpenAI messages → Gemini `systemInstruction` + `contents`: assistant turns become `model`, tool calls
// `functionCall` parts (with their thought signature back), tool results `functionResponse` parts of a
// user turn, images `inlineData` (data: URLs) or `fileData` (links); consecutive same-role turns merged.

import { type ImageSource, pieces, textOf } from '../content'
import type { ChatMessage, RequestToolCall } from '../openai-types'
import { thoughtSignatureOf } from '../tool-ids'
import { isRecord, parseJson } from '../upstream-errors'

type Part = Record<string, unknown>
type Role = 'user' | 'model'

export interface GeminiContent {
  role: Role
  parts: Part[]
}

/**
 * Google's documented stand-in for a missing thought signature, for calls that did not come from
 * Gemini (another provider, or a client that made its own ids). Gemini 1.x/2.x do not check them.
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator'
const needsSignature = (modelId: string) => !/^gemini-[12][.-]/.test(modelId)

function imagePart(source: ImageSource): Part {
  if (source.kind === 'inline') return { inlineData: { mimeType: source.mediaType, data: source.data } }
  return { fileData: source.mediaType ? { mimeType: source.mediaType, fileUri: source.url } : { fileUri: source.url } }
}

function userParts(m: ChatMessage): Part[] {
  return pieces(m, 'google').map((p) => (p.kind === 'text' ? { text: p.text } : imagePart(p.source)))
}

/** Gemini wants objects for both call arguments and results. */
function asObject(text: string | undefined, key: string): Record<string, unknown> {
  const parsed = parseJson(text ?? '')
  return isRecord(parsed) ? parsed : { [key]: parsed ?? text }
}

function callPart(tc: RequestToolCall, first: boolean, modelId: string): Part {
  const part: Part = { functionCall: { name: tc.function.name, args: asObject(tc.function.arguments, 'value') } }
  // Only the first call of a turn carries the signature (that is where Gemini puts it, too).
  const signature = thoughtSignatureOf(tc.id) ?? (first && needsSignature(modelId) ? SKIP_SIGNATURE : undefined)
  if (signature) part.thoughtSignature = signature
  return part
}

export function toGeminiContents(messages: readonly ChatMessage[], modelId: string): { system: string; contents: GeminiContent[] } {
  const system: string[] = []
  const contents: GeminiContent[] = []
  /** Function names by tool-call id, for the functionResponse parts (Gemini pairs them by name). */
  const names = new Map<string, string>()
  const add = (role: Role, parts: Part[]) => {
    if (parts.length === 0) return
    const last = contents[contents.length - 1]
    if (last?.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textOf(m, 'google')
        if (text) system.push(text)
        break
      }
      case 'user':
        add('user', userParts(m))
        break
      case 'assistant': {
        const text = textOf(m, 'google')
        const calls = (m.tool_calls ?? []).map((tc, i) => {
          names.set(tc.id, tc.function.name)
          return callPart(tc, i === 0, modelId)
        })
        add('model', [...(text ? [{ text }] : []), ...calls])
        break
      }
      case 'tool': {
        const name = names.get(m.tool_call_id ?? '') ?? (typeof m.name === 'string' ? m.name : 'unknown')
        add('user', [{ functionResponse: { name, response: asObject(textOf(m, 'google'), 'output') } }])
        break
      }
      default: {
        const unknownRole: never = m.role
        throw new Error(`unknown role ${String(unknownRole)}`)
      }
    }
  }
  return { system: system.join('\n\n'), contents }
}
