// POST /v1/embeddings body (OpenAI's shape) → gw's ChatInput: no conversation, a policy view of the input
// texts (blocked terms, prompt-token limits, rate limits, usage estimate) and the checked request for the
// embeddings adapters.

import { type Static, Type as t } from '@sinclair/typebox'
import { badRequest } from '../../errors'
import { parseMetadata, type RouteResolver, routingOf, withoutGatewayFields } from '../../pipeline/chat-input'
import type { ChatInput } from '../../pipeline/context'
import { inputTextsView } from '../../pipeline/policy-view'
import type { TextSlot } from '../../guardrails/guard'
import type { ChatRequest } from '../../providers/openai-types'
import { validator } from '../../schemas/chat-body'

export const EmbeddingsBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256 }),
    input: t.Union([
      t.String(),
      t.Array(t.String(), { minItems: 1, maxItems: 2048 }),
      t.Array(t.Integer({ minimum: 0 }), { minItems: 1 }),
      t.Array(t.Array(t.Integer({ minimum: 0 }), { minItems: 1 }), { minItems: 1, maxItems: 2048 }),
    ]),
    encoding_format: t.Optional(t.Union([t.Literal('float'), t.Literal('base64')])),
    // The largest vectors any provider gives are 3,072 numbers; a huge value is a mistake, not a request.
    dimensions: t.Optional(t.Integer({ minimum: 1, maximum: 16_384 })),
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

/** `model`: one of the org's routes or `provider/model-id`. */
export function parseEmbeddingsInput(raw: unknown, routeOf?: RouteResolver): { input: ChatInput; request: EmbeddingsRequest } {
  const b = checkEmbeddingsBody(raw)
  const rawRecord = raw as Record<string, unknown>
  const texts = typeof b.input === 'string' ? [b.input] : b.input
  const tokens = texts.length > 0 && typeof texts[0] !== 'string'
  if (texts.some((x) => (typeof x === 'string' ? false : !Array.isArray(x) && typeof x !== 'number')))
    throw badRequest('Invalid field "input": expected a string, an array of strings or token arrays')
  const input = tokens ? (typeof texts[0] === 'number' ? [texts as number[]] : (texts as number[][])) : (texts as string[])
  const { metadata: _gw, ...native } = withoutGatewayFields(rawRecord)
  const { model: _model, input: _input, ...rest } = native
  const chat: ChatInput = {
    requestedModel: b.model,
    ...routingOf(raw, b.model, routeOf),
    body: noConversation(b.model),
    view: inputTextsView(input, rest),
    stream: false,
    // OpenAI's embeddings request has no metadata of its own: a body `metadata` is gw's.
    metadata: parseMetadata(rawRecord.metadata),
    user: b.user,
    outputSchema: undefined,
  }
  return {
    input: chat,
    request: { native, input, base64: b.encoding_format === 'base64', dimensions: b.dimensions },
  }
}

/**
 * The body of a request that sends no conversation: the model alone, no messages. The stages after the
 * policy (clamp, attempt) carry a chat body to the adapters; the embeddings adapters build their request
 * from the EmbeddingsRequest instead, and the policy and the usage estimate read the view.
 */
function noConversation(model: string): ChatRequest & { messages: [] } {
  return { model, messages: [] }
}

/** The input texts, for the org's guardrails (PRODUCT §19): a change reaches what every adapter sends. */
export function inputSlots(req: EmbeddingsRequest): TextSlot[] {
  const texts = req.input
  if (!texts.every((x): x is string => typeof x === 'string')) return []
  return texts.map((_, i) => ({
    get: () => texts[i] as string,
    set: (t: string) => {
      texts[i] = t
      req.native.input = typeof req.native.input === 'string' ? t : [...texts]
    },
  }))
}
