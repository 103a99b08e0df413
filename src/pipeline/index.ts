// The runner: the one place the stages are called, in the seed's order, for every declared endpoint
// (src/pipeline/endpoint.ts; the declarations are in src/apis/).
//
//  stage        file           adds / produces                                   fails with
//  1 auth       1-auth.ts      AuthedContext {identity, org}; only then the body   401 unauthorized
//  - input      the endpoint's plan(): ChatInput (gateway fields split off,        400 gateway_error
//               validated), its answer shape and adapters
//  2 policy     2-policy.ts    charges: rate limits, budget reservation, stream    403/400/429 (PRODUCT §5)
//                              slot, held by the request's Settlement
//  3 route      3-route.ts     Candidate[]: primary + fallback chain → Target      –
//  4 clamp      4-clamp.ts     per attempt: body fitted to the target, warnings    –
//  5 dispatch   5-fallback.ts  Dispatched: answer, attempts, fallback info         502/504 provider_error
//               5-attempt.ts   one upstream attempt: timers, abort, commit point, health record
//  6 answer     6-normalise.ts the answer in the endpoint's shape (JSON or SSE), x-gw-* headers
//  7 settle     settlement.ts  once per request, however it ends: the log entry (7-log.ts), the
//                              observation, the charges settled
//
// Stages 4 and 5 run once per attempt inside dispatch, because every fallback model gets its own
// clamping. A stream is settled when it ends, fails or the client leaves.

import { cachedAnswer, cacheUse, keep, lookUp } from '../cache/response-cache'
import { guardFor } from '../guardrails/guard'
import { authenticate, checkEndpointScope } from './1-auth'
import { enforcePolicy } from './2-policy'
import { route } from './3-route'
import { type DispatchFailed, type Dispatched, dispatch } from './5-fallback'
import { jsonAnswer, streamAnswer } from './6-normalise'
import { chooseStreamPath } from './stream-path'
import { answeredOutcome, endUserId, failureOutcome, type Outcome } from './7-log'
import { checkEndUserHeader, type RouteResolver } from './chat-input'
import type { AuthedContext, ChatInput, Deps, OrgContext, RawBody, RequestContext } from './context'
import type { EndpointDeclaration } from './endpoint'
import { chooseRoute } from './route-choice'
import { failureOf, observeUnlogged, Settlement } from './settlement'

/** Reads the request body; called only once the caller is authenticated. */
export type BodyReader = () => Promise<RawBody>

/** What the HTTP edge hands the runner besides the request's context. */
export interface EndpointIo {
  readBody: BodyReader
  params: Record<string, string>
  /** The request's URL: its query is parsed for an endpoint that declares one. */
  url: string
}

/** The query of a request's URL (a server's request URL has no fragment), without parsing the whole URL. */
function queryOf(url: string): URLSearchParams {
  const q = url.indexOf('?')
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1))
}

/** Stage 1: the request's context once its credential is verified (401 otherwise). */
export async function authenticateRequest(deps: Deps, ctx: RequestContext): Promise<AuthedContext> {
  const { identity, org } = await authenticate(deps, ctx.headers)
  return { ...ctx, identity, org }
}

/** A declared endpoint's request, from its credential to its settlement. */
export async function runEndpoint(deps: Deps, e: EndpointDeclaration, request: RequestContext, io: EndpointIo): Promise<Response> {
  deps.observer.requestStarted(request)
  let ctx: AuthedContext
  try {
    ctx = await authenticateRequest(deps, request)
  } catch (err) {
    // A refused credential is observed (metrics, access log), never logged: it belongs to no org.
    observeUnlogged(deps, request, failureOf(err))
    throw err
  }
  return runAuthenticated(deps, e, ctx, io)
}

/**
 * A declared endpoint's request whose caller the admin API has already checked (the dashboard's
 * prompt playground): stage 1 only loads the org.
 */
export async function runForOrg(deps: Deps, e: EndpointDeclaration, request: RequestContext, org: OrgContext, io: EndpointIo): Promise<Response> {
  deps.observer.requestStarted(request)
  return runAuthenticated(deps, e, { ...request, identity: { orgId: org.org.id, authMode: 'Admin', subject: 'dashboard' }, org }, io)
}

/** Stages 2–7 for an authenticated request. */
async function runAuthenticated(deps: Deps, e: EndpointDeclaration, ctx: AuthedContext, io: EndpointIo): Promise<Response> {
  const settlement = new Settlement(deps, ctx)
  let dispatched: Dispatched | DispatchFailed | undefined
  try {
    // Known before anything may refuse the request: until its input is screened, its body is not logged (PRODUCT §19).
    const guard = (settlement.guard = guardFor(ctx.org.org.policy.guardrails, deps.fetch))
    checkEndpointScope(ctx)
    checkEndUserHeader(ctx.headers)
    ctx.rawBody = await io.readBody()
    const plan = await e.plan({ deps, ctx, body: ctx.rawBody, params: io.params, query: e.query && queryOf(io.url), routeOf: routeResolver(deps, ctx) })
    const input = (settlement.input = plan.input)
    const run = plan.context ?? ctx
    settlement.hold(await enforcePolicy(deps, run.identity, run.org, input, endUserId(ctx, input), ctx.signal, ctx.rawBody))
    if (plan.answerHere) {
      await guard?.screenInput(input.body, ctx.signal)
      return await plan.answerHere(settlement.finish)
    }
    const path = await chooseStreamPath(plan, input, guard, ctx.signal)
    // An answer the guardrails changed is never kept: it holds this request's values or placeholders.
    const cache = ctx.operation && !guard?.hides && !guard?.readsAnswer ? cacheUse(ctx, input, plan) : undefined
    if (cache?.read) {
      const kept = await lookUp(deps, ctx, cache)
      if (kept) return await cachedAnswer(deps, ctx, input, kept, plan.shape, settlement.finish)
    }
    const d = (dispatched = await dispatch(deps, run, input, route(deps, run.org, input), path.adapters))
    if (!d.ok) {
      const { status, code, message } = d.error
      await settlement.finish(failureOutcome(status, code, message, { attempts: d.attempts, model: d.lastModel }))
      throw d.error
    }
    // A stream's transcript holds its first choice only: a stream of several is not kept.
    const keepable = d.answer.kind === 'json' || !(typeof input.body.n === 'number' && input.body.n > 1)
    if (cache) settlement.cached(cache.read ? 'miss' : 'refresh', (o) => (keepable ? keep(deps, ctx, cache, o, d.answer.kind === 'json' ? d.answer.completion : undefined) : undefined))
    let res: Response
    if (d.answer.kind === 'json') {
      res = await jsonAnswer(deps, ctx, d, settlement.finish, plan.shape, guard && ((c) => guard.answer(c.choices, ctx.signal)))
    } else {
      res = streamAnswer(deps, ctx, d, settlement.finish, plan.shape, settlement.countTokens, path.transform)
    }
    if (ctx.operation) res.headers.set('x-gw-cache', cache ? 'miss' : 'off')
    return res
  } catch (err) {
    // An answer that failed on gw's side after the provider answered still names who answered.
    await settlement.fail(err, dispatched?.ok ? { attempts: dispatched.attempts, target: dispatched.attempt.target } : {})
    throw err
  }
}

/**
 * The other API routes (models, logs, usage): no log entry, but the metrics, the access log and the
 * trace see them like the others. `handle` authenticates through the function it is given.
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
      checkEndpointScope(authed)
      return authed
    })
    o = answeredOutcome(res.status)
    return res
  } catch (err) {
    o = failureOf(err)
    throw err
  } finally {
    if (o) observeUnlogged(deps, ctx, o)
  }
}

/** The org's routes, each resolved to a target when a request names it (PRODUCT §13). */
function routeResolver(deps: Deps, ctx: AuthedContext): RouteResolver {
  return (name) => {
    const route = ctx.org.routes.get(name)
    return route && chooseRoute(route, ctx.org, deps.health, deps.latency)
  }
}
