// POST /v1/embeddings body (OpenAI's shape) → gw's ChatInput: the inputs as user messages for policy
// (blocked terms, prompt-token limits, rate limits) and the checked request for the embeddings adapters.

import { type Static, Type as t } from '@sinclair/typebox'
import { badRequest } from '../../errors'
import { parseChatInput } from '../../pipeline/chat-input'
import type { ChatInput } from '../../pipeline/context'
import { validator } from '../../schemas/chat-body'

const EmbeddingsBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256 }),
    input: t.Union([
      t.String(),
      t.Array(t.String(), { minItems: 1, maxItems: 2048 }),
      t.Array(t.Integer({ minimum: 0 }), { minItems: 1 }),
      t.Array(t.Array(t.Integer({ minimum: 0 }), { minItems: 1 }), { minItems: 1, maxItems: 2048 }),
    ]),
    encoding_format: t.Optional(t.Union([t.Literal('float'), t.Literal('base64')])),
    dimensions: t.Optional(t.Integer({ minimum: 1 })),
    user: t.Optional(t.String({ maxLength: 256 })),
  },
  { additionalProperties: true },
)
export type EmbeddingsBodyT = Static<typeof EmbeddingsBody>
const checkEmbeddingsBody = validator(EmbeddingsBody)

/** What the embeddings adapters need from the request. */
export interface EmbeddingsRequest {
  /** The client's body minus gw's fields (what OpenAI gets, model swapped). */
  native: Record<string, unknown>
  /** Texts, or OpenAI token arrays (which only OpenAI takes). */
  input: string[] | number[][]
  base64: boolean
  dimensions: number | undefined
}

const GATEWAY_FIELDS = ['metadata', 'fallback_chain', 'x-gw-fallback-chain', 'prompt_id', 'x-gw-prompt-id']

export function parseEmbeddingsInput(raw: unknown): { input: ChatInput; request: EmbeddingsRequest } {
  const b = checkEmbeddingsBody(raw)
  const rawRecord = raw as Record<string, unknown>
  const texts = typeof b.input === 'string' ? [b.input] : b.input
  const tokens = texts.length > 0 && typeof texts[0] !== 'string'
  if (texts.some((x) => (typeof x === 'string' ? false : !Array.isArray(x) && typeof x !== 'number')))
    throw badRequest('Invalid field "input": expected a string, an array of strings or token arrays')
  const input = tokens ? (typeof texts[0] === 'number' ? [texts as number[]] : (texts as number[][])) : (texts as string[])
  const messages = input.map((x) => ({ role: 'user', content: typeof x === 'string' ? x : '' }))
  // gw's fields (metadata, fallback_chain, prompt_id) are read the way chat completions reads them.
  const chat = parseChatInput({
    model: b.model,
    messages: messages.length ? messages : [{ role: 'user', content: '' }],
    ...Object.fromEntries(GATEWAY_FIELDS.filter((f) => f in rawRecord).map((f) => [f, rawRecord[f]])),
    ...(b.user !== undefined ? { user: b.user } : {}),
  })
  const native = { ...rawRecord }
  for (const f of GATEWAY_FIELDS) delete native[f]
  return {
    input: chat,
    request: { native, input, base64: b.encoding_format === 'base64', dimensions: b.dimensions },
  }
}
