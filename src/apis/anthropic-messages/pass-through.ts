// The Anthropic adapter of /v1/messages: the client's body goes upstream untouched apart from `model`
// (system blocks, cache_control, thinking signatures, tools, documents), with the client's
// anthropic-version and anthropic-beta; the answer and its events come back as Anthropic sent them.

import { ANTHROPIC_VERSION, anthropic } from '../../providers/anthropic'
import { addCacheBreakpoints } from '../../providers/anthropic/prompt-cache'
import { readAnthropicMessage } from '../../providers/anthropic/response'
import { AnthropicStream } from '../../providers/anthropic/stream'
import type { ProviderAdapter, Target, UpstreamRequest } from '../../providers/adapter'
import { isRecord } from '../../providers/upstream-errors'
import { RawRelay, withModel } from '../raw-relay'

/** The events read on the serving thread past the commit point (RawRelay): text and argument deltas, block ends and pings are not. */
const ACTS_ON = new Set(['message_start', 'content_block_start', 'message_delta', 'message_stop', 'error'])

/** Anthropic's stream relayed as its bytes to a /v1/messages client. */
export const anthropicRelay = () => new RawRelay(new AnthropicStream(false), 'anthropic', ACTS_ON)

function anthropicHeaders(target: Target, client: Headers): Record<string, string> {
  const h: Record<string, string> = {
    'x-api-key': target.apiKey,
    'anthropic-version': client.get('anthropic-version') ?? ANTHROPIC_VERSION,
    'content-type': 'application/json',
  }
  const beta = client.get('anthropic-beta')
  if (beta) h['anthropic-beta'] = beta
  return h
}

/** The client's body with the managed cache breakpoints (PRODUCT §19, `promptCaching: "auto"`), on a copy: the client's own stays as sent. */
function withBreakpoints(native: Record<string, unknown>, model: string): string {
  const body = structuredClone({ ...native, model })
  addCacheBreakpoints(body, model)
  return JSON.stringify(body)
}

export function anthropicPassThrough(native: Record<string, unknown>, client: Headers): ProviderAdapter {
  return {
    ...anthropic,
    buildRequest: (_req, target): UpstreamRequest => ({
      url: `${target.baseUrl}/messages`,
      headers: anthropicHeaders(target, client),
      body: target.promptCaching ? withBreakpoints(native, target.model.id) : withModel(native, target.model.id),
    }),
    parseResponse: (json) => ({ ...readAnthropicMessage(json, false), native: json }),
    createStream: anthropicRelay,
  }
}

/** POST /v1/messages/count_tokens, relayed: the answer is `{input_tokens}` (counting is free: no usage is logged). */
export function anthropicCountTokens(native: Record<string, unknown>, client: Headers): ProviderAdapter {
  return {
    ...anthropic,
    buildRequest: (_req, target): UpstreamRequest => ({
      url: `${target.baseUrl}/messages/count_tokens`,
      headers: anthropicHeaders(target, client),
      body: withModel(native, target.model.id),
    }),
    parseResponse: (json) => {
      if (!isRecord(json) || typeof json.input_tokens !== 'number') throw new Error('answer has no input_tokens')
      return {
        choices: [{ index: 0, message: { role: 'assistant', content: '', refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        native: json,
      }
    },
  }
}
