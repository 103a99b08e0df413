// The chat pipeline: the only place its stages are called, in the seed's order.
//
//  stage        file           adds / produces                                   fails with
//  1 auth       1-auth.ts      ctx.identity {orgId, authMode, subject}, ctx.org   401 unauthorized
//  - input      chat-input.ts  ChatInput (gateway fields split off, validated)    400 gateway_error
//               prompt-input.ts  (prompt runs: version, variables, rendering)    400/404 gateway_error
//  2 policy     2-policy.ts    rate-limit charge (settled with the real usage)    403/400/429 (PRODUCT §5)
//  3 route      3-route.ts     Candidate[]: primary + fallback chain → Target      –
//  4 clamp      4-clamp.ts     per attempt: body fitted to the target, warnings    –
//  5 dispatch   5-dispatch.ts  Dispatched: answer, attempts, fallback info         502/504 provider_error
//  6 normalise  6-normalise.ts OpenAI JSON body or SSE stream, x-gw-* headers      –
//  7 log        7-log.ts       one log entry per request, queued for the writer   –
//
// Stages 4 and 5 run once per attempt inside dispatch, because every fallback model gets its
// own clamping. The log entry is written when the answer is complete: for streams, when the
// stream ends, fails or the client leaves.

import { GatewayError } from '../errors'
import { authenticate } from './1-auth'
import { type Charge, enforcePolicy, settleCharge } from './2-policy'
import { route } from './3-route'
import { type AdapterLookup, dispatch } from './5-dispatch'
import { type AnswerShape, CHAT_SHAPE, jsonAnswer, streamAnswer } from './6-normalise'
import { failureOutcome, type Outcome, recordRequest } from './7-log'
import { applyGatewayHeaders, parseChatInput } from './chat-input'
import type { ChatInput, Deps, RequestContext } from './context'
import { linkPrompt, parsePromptRun } from './prompt-input'
import { MESSAGES_SHAPE } from '../apis/anthropic-messages/answer'
import { estimateCount } from '../apis/anthropic-messages/count-tokens'
import { anthropicCountTokens, anthropicPassThrough } from '../apis/anthropic-messages/pass-through'
import { parseCountTokensInput, parseMessagesInput } from '../apis/anthropic-messages/request'
import { adapterFor } from '../providers/registry'

/** Stage 1, on its own: the prompt-run endpoint authenticates before it loads the prompt. */
export async function authenticateRequest(deps: Deps, ctx: RequestContext): Promise<void> {
  const { identity, org } = await authenticate(deps, ctx.headers)
  ctx.identity = identity
  ctx.org = org
}

/** POST /v1/chat/completions. */
export async function handleChat(deps: Deps, ctx: RequestContext, raw: unknown): Promise<Response> {
  await authenticateRequest(deps, ctx)
  const input = await parseOrLog(deps, ctx, async () => {
    const parsed = applyGatewayHeaders(parseChatInput(raw), ctx.headers)
    if (parsed.promptRef) ctx.prompt = await linkPrompt(deps.store, ctx.identity?.orgId as string, parsed.promptRef)
    return parsed
  })
  return executeChat(deps, ctx, input)
}

/** POST /v1/prompts/:idOrSlug/run: the saved prompt rendered into a chat request, then the same stages. */
export async function handlePromptRun(
  deps: Deps,
  ctx: RequestContext,
  ref: string,
  selector: string | null,
  raw: unknown,
): Promise<Response> {
  await authenticateRequest(deps, ctx)
  const input = await parseOrLog(deps, ctx, () => parsePromptRun(deps.store, ctx, ref, selector, raw))
  return executeChat(deps, ctx, input)
}

/** POST /v1/messages: Anthropic Messages in; Anthropic answers relayed, the other providers translated. */
export async function handleMessages(deps: Deps, ctx: RequestContext, raw: unknown): Promise<Response> {
  await authenticateRequest(deps, ctx)
  const { input, native } = await parseOrLog(deps, ctx, () => withGatewayHeaders(deps, ctx, parseMessagesInput(raw)))
  const passThrough = anthropicPassThrough(native, ctx.headers)
  return executeChat(deps, ctx, input, {
    shape: MESSAGES_SHAPE,
    adapters: (p) => (p === 'anthropic' ? passThrough : adapterFor(p)),
  })
}

/** POST /v1/messages/count_tokens: Anthropic's count, or gw's own estimate for other providers. */
export async function handleCountTokens(deps: Deps, ctx: RequestContext, raw: unknown): Promise<Response> {
  await authenticateRequest(deps, ctx)
  const { input, native } = await parseOrLog(deps, ctx, () => withGatewayHeaders(deps, ctx, parseCountTokensInput(raw)))
  if (input.model.provider === 'anthropic') {
    const counter = anthropicCountTokens(native, ctx.headers)
    return executeChat(deps, ctx, input, { shape: MESSAGES_SHAPE, adapters: (p) => (p === 'anthropic' ? counter : undefined) })
  }
  return estimateCount(deps, ctx, input)
}

/** Applies the `x-gw-*` gateway headers and links `prompt_id` (both win over / come from the body). */
async function withGatewayHeaders<T extends { input: ChatInput }>(deps: Deps, ctx: RequestContext, parsed: T): Promise<T> {
  applyGatewayHeaders(parsed.input, ctx.headers)
  if (parsed.input.promptRef) ctx.prompt = await linkPrompt(deps.store, ctx.identity?.orgId as string, parsed.input.promptRef)
  return parsed
}

/** Input errors after authentication are logged like any other failure. */
async function parseOrLog<T>(deps: Deps, ctx: RequestContext, parse: () => Promise<T>): Promise<T> {
  try {
    return await parse()
  } catch (err) {
    logFailure(deps, ctx, undefined, err)
    throw err
  }
}

/**
 * What differs between the endpoints that run these stages: which adapter talks to each provider
 * (chat translators by default; pass-through or embeddings adapters elsewhere) and the answer's shape.
 */
export interface Endpoint {
  adapters?: AdapterLookup
  shape: AnswerShape
}

const CHAT_ENDPOINT: Endpoint = { shape: CHAT_SHAPE }

/** Stages 2–7 for an authenticated request (chat completions, prompt runs and the endpoints of src/apis/). */
export async function executeChat(
  deps: Deps,
  ctx: RequestContext,
  input: ChatInput,
  endpoint: Endpoint = CHAT_ENDPOINT,
): Promise<Response> {
  const { org, identity } = ctx
  if (!org || !identity) throw new Error('executeChat needs an authenticated context')
  let charge: Charge | undefined
  let logged = false
  const finish = (o: Outcome) => {
    logged = true
    settleCharge(deps, charge, o.usage?.total_tokens ?? 0)
    return recordRequest(deps, ctx, input, o)
  }
  try {
    charge = await enforcePolicy(deps, identity, org, input)
    const candidates = route(deps, org, input)
    const d = await dispatch(deps, ctx, input, candidates, endpoint.adapters)
    if (!d.ok) {
      const { status, code, message } = d.error
      finish(failureOutcome(status, code, message, { attempts: d.attempts, fallback: d.fallback, model: d.lastModel }))
      throw d.error
    }
    logged = true
    return d.answer.kind === 'json'
      ? jsonAnswer(ctx, d, finish, endpoint.shape)
      : streamAnswer(deps, ctx, d, finish, endpoint.shape)
  } catch (err) {
    if (!logged) {
      settleCharge(deps, charge, 0)
      logFailure(deps, ctx, input, err)
    }
    throw err
  }
}

function logFailure(deps: Deps, ctx: RequestContext, input: ChatInput | undefined, err: unknown): void {
  const e = err instanceof GatewayError ? err : new GatewayError(500, 'gateway_error', 'Internal error')
  recordRequest(deps, ctx, input, failureOutcome(e.status, e.code, e.message))
}
