// The chat pipeline: the only place its stages are called, in the seed's order.
//
//  stage        file           adds / produces                                   fails with
//  1 auth       1-auth.ts      AuthedContext {identity, org}; only then the body   401 unauthorized
//  - input      chat-input.ts  ChatInput (gateway fields split off, validated)    400 gateway_error
//               prompt-input.ts  (prompt runs: version, variables, rendering)    400/404 gateway_error
//  2 policy     2-policy.ts    rate-limit charge (settled with the real usage)    403/400/429 (PRODUCT §5)
//  3 route      3-route.ts     Candidate[]: primary + fallback chain → Target      –
//  4 clamp      4-clamp.ts     per attempt: body fitted to the target, warnings    –
//  5 dispatch   5-fallback.ts  Dispatched: answer, attempts, fallback info         502/504 provider_error
//               5-attempt.ts   one upstream attempt: timers, abort, commit point, health record
//  6 normalise  6-normalise.ts the answer in the endpoint's shape, x-gw-* headers   –
//  7 log        7-log.ts       one log entry per request, queued for the writer   –
//
// The endpoints of src/apis/ (Anthropic Messages, OpenAI Responses, embeddings) run the same stages
// with their own Endpoint: the adapter per provider and the shape of the answer.
//
// Stages 4 and 5 run once per attempt inside dispatch, because every fallback model gets its
// own clamping. The log entry is written when the answer is complete: for streams, when the
// stream ends, fails or the client leaves.

import { MESSAGES_SHAPE } from '../apis/anthropic-messages/answer'
import { countingContext, estimateCount } from '../apis/anthropic-messages/count-tokens'
import { anthropicCountTokens, anthropicPassThrough } from '../apis/anthropic-messages/pass-through'
import { parseCountTokensInput, parseMessagesInput } from '../apis/anthropic-messages/request'
import { thinkingAdapter } from '../apis/anthropic-messages/thinking'
import { EMBEDDINGS_SHAPE, embeddingsAdapters } from '../apis/embeddings/adapters'
import { parseEmbeddingsInput } from '../apis/embeddings/request'
import { isGwResponse, responsesShape } from '../apis/responses/answer'
import { previousTurns } from '../apis/responses/history'
import { responsesPassThrough } from '../apis/responses/pass-through'
import { parseResponsesInput, toChatRequest } from '../apis/responses/request'
import { badRequest, GatewayError, notFound } from '../errors'
import { adapterFor } from '../providers/registry'
import { checkEndUserHeader, headerMetadata, withHeaderFields } from './chat-input'
import type { LogEntry } from '../domain/log-entry'
import { authenticate } from './1-auth'
import { type Charge, enforcePolicy, settleCharge, settleTokens } from './2-policy'
import { route } from './3-route'
import { clientGone } from './5-attempt'
import { type AdapterLookup, type DispatchFailed, type Dispatched, dispatch } from './5-fallback'
import { type AnswerShape, chatShape, jsonAnswer, streamAnswer } from './6-normalise'
import { answeredOutcome, endUserId, failureOutcome, logEntry, type Outcome, recordRequest } from './7-log'
import { parseChatInput, type RouteResolver } from './chat-input'
import { chooseRoute } from './route-choice'
import type { AuthedContext, ChatInput, Deps, RawBody, RequestContext } from './context'
import { linkPrompt, parsePromptRun } from './prompt-input'

/** Reads the request body; called only once the caller is authenticated. */
export type BodyReader = () => Promise<RawBody>

/** Stage 1: the request's context once its credential is verified (401 otherwise). */
export async function authenticateRequest(deps: Deps, ctx: RequestContext): Promise<AuthedContext> {
  const { identity, org } = await authenticate(deps, ctx.headers)
  return { ...ctx, identity, org }
}

/** POST /v1/chat/completions. */
export async function handleChat(deps: Deps, request: RequestContext, readBody: BodyReader): Promise<Response> {
  const ctx = await authenticateOrRecord(deps, request)
  const input = await parseOrLog(deps, ctx, async () => {
    ctx.rawBody = await readBody()
    return withGatewayHeaders(deps, ctx, parseChatInput(withHeaderFields(ctx.rawBody.value, ctx.headers), routeResolver(deps, ctx)))
  })
  return executeChat(deps, ctx, input)
}

/** POST /v1/messages: Anthropic Messages in; Anthropic answers relayed, the other providers translated. */
export async function handleMessages(deps: Deps, request: RequestContext, readBody: BodyReader): Promise<Response> {
  const ctx = await authenticateOrRecord(deps, request)
  const { input, native, thinking } = await parseOrLog(deps, ctx, async () => {
    ctx.rawBody = await readBody()
    const parsed = parseMessagesInput(withHeaderFields(ctx.rawBody.value, ctx.headers), routeResolver(deps, ctx))
    await withGatewayHeaders(deps, ctx, parsed.input)
    return parsed
  })
  const passThrough = anthropicPassThrough(native, ctx.headers)
  return executeChat(deps, ctx, input, {
    shape: MESSAGES_SHAPE,
    adapters: (p) => (p === 'anthropic' ? passThrough : thinking ? thinkingAdapter(p, thinking) : adapterFor(p)),
  })
}

/**
 * POST /v1/messages/count_tokens: Anthropic's count, or gw's own estimate for other providers; both
 * under the same policy, the one a count runs under (`countingContext`).
 */
export async function handleCountTokens(deps: Deps, request: RequestContext, readBody: BodyReader): Promise<Response> {
  const authed = await authenticateOrRecord(deps, request)
  const { input, native } = await parseOrLog(deps, authed, async () => {
    authed.rawBody = await readBody()
    const parsed = parseCountTokensInput(withHeaderFields(authed.rawBody.value, authed.headers), routeResolver(deps, authed))
    await withGatewayHeaders(deps, authed, parsed.input)
    return parsed
  })
  const ctx = countingContext(authed)
  if (input.model.provider !== 'anthropic') {
    // Nothing to settle: a count is charged no tokens, budget or stream slot; but it is logged once, whatever throws.
    let recorded = false
    try {
      await enforcePolicy(deps, ctx.identity, ctx.org, input, endUserId(ctx, input), ctx.signal)
      return await estimateCount(ctx, input, (o) => {
        recorded = true
        record(deps, ctx, input, o)
      })
    } catch (err) {
      if (!recorded) logFailure(deps, ctx, input, err)
      throw err
    }
  }
  const counter = anthropicCountTokens(native, ctx.headers)
  return executeChat(deps, ctx, input, { shape: MESSAGES_SHAPE, adapters: (p) => (p === 'anthropic' ? counter : undefined) })
}

/** POST /v1/embeddings: OpenAI's shape in and out; OpenAI, Mistral and Google (Anthropic has none: 400). */
export async function handleEmbeddings(deps: Deps, request: RequestContext, readBody: BodyReader): Promise<Response> {
  const ctx = await authenticateOrRecord(deps, request)
  const { input, request: embeddings } = await parseOrLog(deps, ctx, async () => {
    ctx.rawBody = await readBody()
    const parsed = parseEmbeddingsInput(withHeaderFields(ctx.rawBody.value, ctx.headers), routeResolver(deps, ctx))
    await withGatewayHeaders(deps, ctx, parsed.input)
    if (parsed.input.model.provider === 'anthropic')
      throw badRequest(`Anthropic has no embeddings models ("${parsed.input.model.name.slice(0, 64)}"): use openai/, mistral/ or google/`)
    return parsed
  })
  return executeChat(deps, ctx, input, { shape: EMBEDDINGS_SHAPE, adapters: embeddingsAdapters(embeddings) })
}

/**
 * POST /v1/responses: OpenAI Responses in; OpenAI relayed, the other providers translated. A
 * previous_response_id that gw answered is rebuilt from the log for every provider; OpenAI's own ids
 * only OpenAI can continue.
 */
export async function handleResponses(deps: Deps, request: RequestContext, readBody: BodyReader): Promise<Response> {
  const ctx = await authenticateOrRecord(deps, request)
  const { input, native, body, rebuilt } = await parseOrLog(deps, ctx, async () => {
    ctx.rawBody = await readBody()
    const parsed = parseResponsesInput(withHeaderFields(ctx.rawBody.value, ctx.headers), routeResolver(deps, ctx))
    await withGatewayHeaders(deps, ctx, parsed.input)
    const previous = parsed.body.previous_response_id
    const rebuilt = !!previous && (isGwResponse(previous) || parsed.input.model.provider !== 'openai')
    if (previous && rebuilt) parsed.input.body = toChatRequest(parsed.body, await previousTurns(deps, ctx, previous))
    return { ...parsed, rebuilt }
  })
  const openAIState = !!body.previous_response_id && !rebuilt
  const passThrough = responsesPassThrough(native)
  return executeChat(deps, ctx, input, {
    shape: responsesShape(body),
    adapters: (p) => (p === 'openai' ? (rebuilt ? adapterFor(p) : passThrough) : openAIState ? undefined : adapterFor(p)),
  })
}

/** `x-gw-metadata` wins over the body's metadata; `prompt_id` links the log entry to its prompt. */
async function withGatewayHeaders(deps: Deps, ctx: AuthedContext, input: ChatInput): Promise<ChatInput> {
  input.metadata = headerMetadata(ctx.headers) ?? input.metadata
  if (input.promptRef) ctx.prompt = await linkPrompt(deps.store, ctx.identity.orgId, input.promptRef)
  return input
}

/** POST /v1/prompts/:idOrSlug/run: the saved prompt rendered into a chat request, then the same stages. */
export async function handlePromptRun(
  deps: Deps,
  request: RequestContext,
  ref: string,
  selector: string | null,
  readBody: BodyReader,
): Promise<Response> {
  return runPrompt(deps, await authenticateOrRecord(deps, request), ref, selector, readBody)
}

/**
 * POST /admin/orgs/:org/prompts/:idOrSlug/run (the dashboard's playground): the admin credential was
 * checked by the admin API, so stage 1 only loads the org; the rest is a prompt run like any other.
 */
export async function handleAdminPromptRun(
  deps: Deps,
  request: RequestContext,
  orgId: string,
  ref: string,
  selector: string | null,
  readBody: BodyReader,
): Promise<Response> {
  deps.observer.requestStarted(request)
  const org = await deps.orgs.get(orgId)
  if (!org) throw notFound(`Org "${orgId}" not found`)
  const ctx: AuthedContext = { ...request, identity: { orgId, authMode: 'Admin', subject: 'dashboard' }, org }
  return runPrompt(deps, ctx, ref, selector, readBody)
}

async function runPrompt(deps: Deps, ctx: AuthedContext, ref: string, selector: string | null, readBody: BodyReader): Promise<Response> {
  const input = await parseOrLog(deps, ctx, async () => {
    ctx.rawBody = await readBody()
    const parsed = await parsePromptRun(deps.store, ctx, ref, selector, ctx.rawBody.value)
    parsed.metadata = headerMetadata(ctx.headers) ?? parsed.metadata
    return parsed
  })
  return executeChat(deps, ctx, input)
}

/**
 * The other API routes (models, logs, usage): no log entry, but the metrics, the access log and the
 * trace see them like chat requests. `handle` authenticates through the function it is given.
 */
export async function handleApiRequest(
  deps: Deps,
  request: RequestContext,
  handle: (authenticate: () => Promise<AuthedContext>) => Promise<Response>,
): Promise<Response> {
  deps.observer.requestStarted(request)
  let ctx: RequestContext = request
  let o: Outcome | undefined
  try {
    const res = await handle(async () => {
      const authed = await authenticateRequest(deps, request)
      ctx = authed
      return authed
    })
    o = answeredOutcome(res.status)
    return res
  } catch (err) {
    o = failureOf(err)
    throw err
  } finally {
    if (o) observe(deps, ctx, undefined, logEntry(deps, ctx, undefined, o), o)
  }
}

/** Stage 1 for API requests: a refused credential is observed (metrics, access log), never logged. */
async function authenticateOrRecord(deps: Deps, request: RequestContext): Promise<AuthedContext> {
  deps.observer.requestStarted(request)
  try {
    return await authenticateRequest(deps, request)
  } catch (err) {
    const o = failureOf(err)
    observe(deps, request, undefined, logEntry(deps, request, undefined, o), o)
    throw err
  }
}

/** The org's routes, each resolved to a target when a request names it (PRODUCT §13). */
function routeResolver(deps: Deps, ctx: AuthedContext): RouteResolver {
  return (name) => {
    const route = ctx.org.routes.get(name)
    return route && chooseRoute(route, ctx.org, deps.health, deps.latency)
  }
}

/** Input errors after authentication are logged like any other failure. */
async function parseOrLog<T>(deps: Deps, ctx: AuthedContext, parse: () => Promise<T>): Promise<T> {
  try {
    checkEndUserHeader(ctx.headers)
    return await parse()
  } catch (err) {
    logFailure(deps, ctx, undefined, err)
    throw err
  }
}

/**
 * What differs between the endpoints that run these stages: which adapter talks to each provider
 * (the chat translators by default; pass-through or embeddings adapters elsewhere) and the answer's shape.
 */
export interface Endpoint {
  adapters?: AdapterLookup
  shape: AnswerShape
}

/** Stages 2–7 for an authenticated request (chat completions, prompt runs and the endpoints of src/apis/). */
export async function executeChat(deps: Deps, ctx: AuthedContext, input: ChatInput, endpoint?: Endpoint): Promise<Response> {
  const shape = endpoint?.shape ?? chatShape(input.body.stream_options?.include_usage === true)
  let charge: Charge | undefined
  let dispatched: Dispatched | DispatchFailed | undefined
  // The request ends here exactly once, whatever throws: one log entry, its charges given back.
  // A promise while its token count is being written to the shared counters: the answer waits for it.
  let finished = false
  const finish = (o: Outcome): Promise<void> | undefined => {
    if (finished) return undefined
    finished = true
    let cost: number | null = null
    let counted: Promise<void> | undefined
    try {
      cost = record(deps, ctx, input, o).costUsd
    } finally {
      counted = settleCharge(deps, charge, o.usage?.total_tokens ?? 0, cost)
    }
    return counted
  }
  try {
    charge = await enforcePolicy(deps, ctx.identity, ctx.org, input, endUserId(ctx, input), ctx.signal, ctx.rawBody)
    const candidates = route(deps, ctx.org, input)
    const d = (dispatched = await dispatch(deps, ctx, input, candidates, endpoint?.adapters))
    if (!d.ok) {
      const { status, code, message } = d.error
      await finish(failureOutcome(status, code, message, { attempts: d.attempts, model: d.lastModel }))
      throw d.error
    }
    if (d.answer.kind === 'json') return await jsonAnswer(deps, ctx, d, finish, shape)
    // A stream's token count is settled before its closing events, its log entry after them.
    return streamAnswer(deps, ctx, d, finish, shape, (used) => settleTokens(deps, charge, used))
  } catch (err) {
    // An answer that failed on gw's side after the provider answered still names who answered.
    const answered = dispatched?.ok ? { attempts: dispatched.attempts, target: dispatched.attempt.target } : {}
    if (!finished) await finish({ ...failureOf(err, ctx.signal), ...answered })
    throw err
  }
}

/**
 * What a throw means for the log: gw's own errors as they are; any other once the client has left
 * (a count or a scan stopped for it) is the client closing the request; else an internal error.
 */
function failureOf(err: unknown, signal?: AbortSignal): Outcome {
  const e = err instanceof GatewayError ? err : signal?.aborted ? clientGone() : new GatewayError(500, 'gateway_error', 'Internal error')
  return failureOutcome(e.status, e.code, e.message, { rateLimitScope: e.scope })
}

function logFailure(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, err: unknown): void {
  record(deps, ctx, input, failureOf(err, ctx.signal))
}

/** Stage 7, then the observer: every API request ends here exactly once. */
function record(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, o: Outcome): LogEntry {
  const entry = recordRequest(deps, ctx, input, o)
  observe(deps, ctx, input, entry, o)
  return entry
}

/** Metrics, access log and trace of a finished API request. */
function observe(deps: Deps, ctx: RequestContext, input: ChatInput | undefined, entry: LogEntry, o: Outcome): void {
  deps.observer.requestFinished({
    entry,
    authenticated: 'identity' in ctx,
    ctx,
    known: o.target?.model.known,
    rateLimitScope: o.rateLimitScope,
    response: o.responseBody,
    messages: input?.body.messages,
  })
}
