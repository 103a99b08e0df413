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
//  6 normalise  6-normalise.ts OpenAI JSON body or SSE stream, x-gw-* headers      –
//  7 log        7-log.ts       one log entry per request, queued for the writer   –
//
// Stages 4 and 5 run once per attempt inside dispatch, because every fallback model gets its
// own clamping. The log entry is written when the answer is complete: for streams, when the
// stream ends, fails or the client leaves.

import { GatewayError, notFound } from '../errors'
import { checkEndUserHeader } from './chat-input'
import type { LogEntry } from '../store/types'
import { authenticate } from './1-auth'
import { type Charge, enforcePolicy, settleCharge } from './2-policy'
import { route } from './3-route'
import { dispatch } from './5-fallback'
import { jsonAnswer, streamAnswer } from './6-normalise'
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
    const parsed = parseChatInput(ctx.rawBody.value, routeResolver(deps, ctx))
    if (parsed.promptRef) ctx.prompt = await linkPrompt(deps.store, ctx.identity.orgId, parsed.promptRef)
    return parsed
  })
  return executeChat(deps, ctx, input)
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
    return parsePromptRun(deps.store, ctx, ref, selector, ctx.rawBody.value)
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
    return route && chooseRoute(route, ctx.identity.orgId, deps.health, deps.latency)
  }
}

/** Input errors after authentication are logged like any other failure. */
async function parseOrLog(deps: Deps, ctx: AuthedContext, parse: () => Promise<ChatInput>): Promise<ChatInput> {
  try {
    checkEndUserHeader(ctx.headers)
    return await parse()
  } catch (err) {
    logFailure(deps, ctx, undefined, err)
    throw err
  }
}

/** Stages 2–7 for an authenticated request (chat completions and prompt runs). */
export async function executeChat(deps: Deps, ctx: AuthedContext, input: ChatInput): Promise<Response> {
  let charge: Charge | undefined
  let logged = false
  const finish = (o: Outcome) => {
    logged = true
    const entry = record(deps, ctx, input, o)
    settleCharge(deps, charge, o.usage?.total_tokens ?? 0, entry.costUsd)
  }
  try {
    charge = await enforcePolicy(deps, ctx.identity, ctx.org, input, endUserId(ctx, input), ctx.signal)
    const candidates = route(deps, ctx.org, input)
    const d = await dispatch(deps, ctx, input, candidates)
    if (!d.ok) {
      const { status, code, message } = d.error
      finish(failureOutcome(status, code, message, { attempts: d.attempts, model: d.lastModel }))
      throw d.error
    }
    logged = true
    if (d.answer.kind === 'json') return jsonAnswer(ctx, d, finish)
    return streamAnswer(deps, ctx, d, input.body.stream_options?.include_usage === true, finish)
  } catch (err) {
    if (!logged) {
      settleCharge(deps, charge, 0, null)
      logFailure(deps, ctx, input, err)
    }
    throw err
  }
}

function failureOf(err: unknown): Outcome {
  const e = err instanceof GatewayError ? err : new GatewayError(500, 'gateway_error', 'Internal error')
  return failureOutcome(e.status, e.code, e.message, { rateLimitScope: e.scope })
}

function logFailure(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, err: unknown): void {
  record(deps, ctx, input, failureOf(err))
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
