// TypeBox schemas of what the client API endpoints answer, and of the three error bodies gw sends
// (PRODUCT §4, §12): the OpenAPI document's answer schemas (docs/apis.md, "The OpenAPI document").

import { type TSchema, Type as t } from '@sinclair/typebox'
import { ERROR_CODES } from '../errors'

/** Open objects: the providers' answers carry more fields than gw names, and newer ones keep coming. */
const open = { additionalProperties: true }
const count = t.Integer({ minimum: 0 })
const nullable = <S extends TSchema>(s: S) => t.Union([s, t.Null()])

const ToolCall = t.Object(
  { id: t.String(), type: t.Literal('function'), function: t.Object({ name: t.String(), arguments: t.String() }, open) },
  open,
)

const ChatUsage = t.Object(
  {
    prompt_tokens: count,
    completion_tokens: count,
    total_tokens: count,
    prompt_tokens_details: t.Optional(t.Object({ cached_tokens: t.Optional(count) }, open)),
    completion_tokens_details: t.Optional(t.Object({ reasoning_tokens: t.Optional(count) }, open)),
    cost_usd: t.Optional(nullable(t.Number({ description: "gw's: the cost in USD at the catalog's prices, null when unknown (PRODUCT §11)" }))),
  },
  open,
)

/** POST /v1/chat/completions and the prompt runs, not streamed: OpenAI's chat completion, with gw's `usage.cost_usd`. */
export const ChatCompletionAnswer = t.Object(
  {
    id: t.String(),
    object: t.Literal('chat.completion'),
    created: t.Integer(),
    model: t.String({ description: 'provider/model-id of the model that answered' }),
    choices: t.Array(
      t.Object(
        {
          index: t.Integer(),
          message: t.Object(
            {
              role: t.Literal('assistant'),
              content: nullable(t.String()),
              refusal: t.Optional(nullable(t.String())),
              tool_calls: t.Optional(t.Array(ToolCall)),
            },
            open,
          ),
          finish_reason: t.String({ description: 'stop, length, tool_calls or content_filter' }),
          logprobs: t.Optional(t.Unknown()),
        },
        open,
      ),
    ),
    usage: ChatUsage,
  },
  { ...open, title: 'ChatCompletion' },
)

/** POST /v1/messages, not streamed: Anthropic's Message. */
export const MessageAnswer = t.Object(
  {
    id: t.String(),
    type: t.Literal('message'),
    role: t.Literal('assistant'),
    model: t.String(),
    content: t.Array(t.Object({ type: t.String({ description: 'text, thinking, tool_use, …' }) }, open)),
    stop_reason: nullable(t.String()),
    stop_sequence: t.Optional(nullable(t.String())),
    usage: t.Object(
      {
        input_tokens: count,
        output_tokens: count,
        cache_creation_input_tokens: t.Optional(nullable(count)),
        cache_read_input_tokens: t.Optional(nullable(count)),
      },
      open,
    ),
  },
  { ...open, title: 'Message' },
)

/** POST /v1/messages/count_tokens. */
export const CountTokensAnswer = t.Object({ input_tokens: count }, { title: 'CountTokens' })

/** POST /v1/responses, not streamed: OpenAI's Response object (its many settings echoed are left open). */
export const ResponseAnswer = t.Object(
  {
    id: t.String(),
    object: t.Literal('response'),
    created_at: t.Number(),
    status: t.String({ description: 'completed, incomplete, failed, …' }),
    model: t.String(),
    output: t.Array(t.Object({ type: t.String({ description: 'message, function_call, reasoning, …' }) }, open)),
    usage: t.Optional(
      nullable(t.Object({ input_tokens: count, output_tokens: count, total_tokens: count }, open)),
    ),
  },
  { ...open, title: 'Response' },
)

/** POST /v1/embeddings: OpenAI's list of embeddings (base64 strings with `encoding_format: "base64"`). */
export const EmbeddingsAnswer = t.Object(
  {
    object: t.Literal('list'),
    data: t.Array(
      t.Object({ object: t.Literal('embedding'), index: t.Integer(), embedding: t.Union([t.Array(t.Number()), t.String()]) }, open),
    ),
    model: t.String(),
    usage: t.Object({ prompt_tokens: count, total_tokens: count }, open),
  },
  { ...open, title: 'EmbeddingsList' },
)

const ErrorCodeSchema = t.Union(ERROR_CODES.map((c) => t.Literal(c)))

/** gw's error body, the seed's shape (PRODUCT §4). */
export const GwErrorAnswer = t.Object(
  { error: t.Literal(true), code: ErrorCodeSchema, message: t.String(), requestId: t.String() },
  { title: 'GwError' },
)

/** The same error in OpenAI's shape: GW_ERROR_FORMAT=openai, `x-gw-error-format: openai`, the OpenAI SDKs, and always on /v1/responses. */
export const OpenAiErrorAnswer = t.Object(
  {
    error: t.Object({
      message: t.String(),
      /** gw's code, or `invalid_request_error` where the client's API says so (PRODUCT §4a). */
      type: t.Union([ErrorCodeSchema, t.Literal('invalid_request_error')]),
      code: ErrorCodeSchema,
      param: t.Null(),
    }),
    requestId: t.String(),
  },
  { title: 'OpenAiError' },
)

/** Anthropic's error body, on /v1/messages and /v1/messages/count_tokens, carrying gw's code and request id (PRODUCT §12). */
export const AnthropicErrorAnswer = t.Object(
  {
    type: t.Literal('error'),
    error: t.Object({ type: t.String({ description: 'invalid_request_error, authentication_error, rate_limit_error, …' }), message: t.String(), code: ErrorCodeSchema }),
    request_id: t.String(),
  },
  { title: 'AnthropicError' },
)
