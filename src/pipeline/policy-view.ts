// The policy's view of a request (PRODUCT §16), made by each endpoint's parser: what stage 2 screens for
// blocked terms, the prompt's token estimate and count, the output limit, and what the budget reservation
// reads. Chat-shaped requests are seen through their conversation; embeddings through their input texts.

import { type CostBounds, costBounds } from '../policy/budgets'
import { countPromptTokens, countTextTokens, promptTokensAtMost, textTokensAtMost, type TokenCountOptions } from '../policy/prompt-tokens'
import type { ChatRequest } from '../providers/openai-types'
import { estimatePromptTokens, estimateTokens } from '../tokens'
import type { ChatInput, OutputSchema, RawBody } from './context'

/** What a request that generates text says about the length of its answer. */
export interface OutputLimit {
  /** Each field the request sets that an adapter may turn into the provider's output limit, with its value. */
  set(): [field: string, value: number][]
  /** Sets the output limit (the org's `maxTokens`) on a request that sets none. */
  fill(limit: number): void
}

export interface PolicyView {
  /** The values screened for blocked terms: everything of the request that reaches a provider as content. */
  screened(): unknown[]
  /** The prompt's token estimate (about 4 characters a token), worked out once and shared: rate limits, context check, usage. */
  promptEstimate(): number
  /** The most tokens `countPromptTokens` can find, at the cost of measuring the texts (a token is at least a byte). */
  promptTokensAtMost(): number
  /** The prompt's tokens by the tokenizer, for `maxPromptTokens` and count_tokens' estimate. */
  countPromptTokens(opts?: TokenCountOptions): Promise<number>
  /** The answer's output limit; undefined when the request generates no text (embeddings, count_tokens). */
  readonly output: OutputLimit | undefined
  /** What bounds the request's cost (the budget reservation), from this view and the body as received. */
  costBounds(raw: RawBody | undefined): CostBounds
  /** The request's input as a trace shows it (GW_TRACE_CONTENT). */
  traced(): unknown
}

/** The fields adapters read as the answer's token limit (PRODUCT §4). */
const OUTPUT_LIMIT_FIELDS = ['max_tokens', 'max_completion_tokens'] as const

/** The largest output limit a request sets, or undefined when it sets none (or generates nothing). */
export function largestOutputLimit(output: OutputLimit | undefined): number | undefined {
  const set = output?.set() ?? []
  return set.length ? Math.max(...set.map(([, n]) => n)) : undefined
}

/**
 * The view of a chat-shaped request, read from `of` when asked (an endpoint may still replace its body
 * before the policy runs): the body as it goes upstream plus the output schema. `generates: false` for
 * a request that is only counted (count_tokens): no output limit. One object per request (it is on
 * every request's path): its own output limit when it generates.
 */
class ConversationView implements PolicyView, OutputLimit {
  constructor(
    private readonly of: { body: ChatRequest; outputSchema: OutputSchema | undefined },
    private readonly generates: boolean,
  ) {}

  get output(): OutputLimit | undefined {
    return this.generates ? this : undefined
  }

  screened(): unknown[] {
    // The model name is the gateway's routing, not prompt text.
    return [{ ...this.of.body, model: undefined }, this.of.outputSchema?.schema]
  }

  promptEstimate(): number {
    return estimatePromptTokens(this.of.body.messages)
  }

  promptTokensAtMost(): number {
    return promptTokensAtMost(this.of.body, this.of.outputSchema?.schema)
  }

  countPromptTokens(opts?: TokenCountOptions): Promise<number> {
    return countPromptTokens(this.of.body, { ...opts, extra: this.of.outputSchema?.schema })
  }

  costBounds(raw: RawBody | undefined): CostBounds {
    return costBounds(this.of.body, raw, this.generates ? largestOutputLimit(this) : 0)
  }

  traced(): unknown {
    return this.of.body.messages
  }

  set(): [field: string, value: number][] {
    const body = this.of.body
    return OUTPUT_LIMIT_FIELDS.flatMap((f) => (body[f] === undefined ? [] : [[f, body[f]] as [string, number]]))
  }

  fill(limit: number): void {
    this.of.body.max_tokens = limit
  }
}

/** A ChatInput whose policy view is its conversation (chat completions, prompt runs, Messages, Responses). */
export function withConversationView(input: Omit<ChatInput, 'view'>, generates = true): ChatInput {
  return Object.assign(input, { view: new ConversationView(input, generates) })
}

/**
 * The view of an embeddings request: its input texts (or OpenAI token arrays, whose length is their
 * count) and the other fields the provider gets (`rest`: the body minus model and input). Nothing is
 * generated: no output limit, and the budget reserves the input alone.
 */
export function inputTextsView(input: readonly string[] | readonly number[][], rest: Record<string, unknown>): PolicyView {
  const strings: string[] = []
  /** Tokens given as such (token arrays). */
  let given = 0
  for (const x of input)
    if (typeof x === 'string') strings.push(x)
    else given += x.length
  let estimate: number | undefined
  return {
    screened: () => [strings, rest],
    promptEstimate: () => (estimate ??= strings.reduce((n, s) => n + estimateTokens(s), given)),
    promptTokensAtMost: () => textTokensAtMost(strings) + given,
    countPromptTokens: async (opts = {}) => given + (await countTextTokens(strings, { ...opts, stopAbove: (opts.stopAbove ?? Infinity) - given })),
    output: undefined,
    costBounds: (raw) => ({
      bytes: Math.max(textTokensAtMost(strings) + given, raw?.bytes ?? 0),
      images: 0,
      maxOutputTokens: 0,
      choices: 1,
      heldInput: undefined,
    }),
    traced: () => input,
  }
}
