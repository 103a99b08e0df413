// Elysia routes made from ApiOperation declarations: each route's method and path are written once, in
// its declaration, which the OpenAPI document (src/http/openapi.ts) reads too.

import type { Server } from 'bun'
import { Elysia } from 'elysia'
import type { ApiOperation, Audience } from '../schemas/api-operation'

/** What a handler gets: the request, its path parameters (by the declaration's `:name`s, `*` for the rest) and the server. */
export interface OperationCall {
  request: Request
  /** The operation's declared path: the request's endpoint name in logs, metrics and traces. */
  path: string
  params: Record<string, string>
  server: Server<unknown> | null
}

export type OperationHandler = (call: OperationCall) => Response | Promise<Response>

/** One handler per declared operation id, none missing, none extra. */
export type Handlers<Ops extends readonly ApiOperation[]> = { [Id in Ops[number]['id']]: OperationHandler }

/**
 * The routes of `operations`, each answered by the handler of its id, behind `guard` when given (run
 * before the handler). Elysia never parses a body here: each handler reads its own, after the caller
 * is authenticated (PRODUCT §4).
 */
export function operationRoutes<const Ops extends readonly ApiOperation[]>(
  name: string,
  operations: Ops,
  handlers: Handlers<Ops>,
  guard?: (call: OperationCall) => Promise<void>,
) {
  const app = new Elysia({ name })
  if (guard) app.onBeforeHandle(({ request, params, server, route }) => guard({ request, path: route, params: params as Record<string, string>, server }))
  for (const op of operations) {
    const handle: OperationHandler = handlers[op.id as Ops[number]['id']]
    app.route(op.method, op.path, ({ request, params, server }) => handle({ request, path: op.path, params: params as Record<string, string>, server }), {
      parse: 'none',
    })
  }
  return app
}


/** Operations of gw's own API, all for one audience and in gw's error shape. */
export function ownOperations<const Ops extends readonly Omit<ApiOperation, 'audience' | 'errorStyle'>[], A extends Audience>(
  audience: A,
  operations: Ops,
): (Ops[number] & { audience: A; errorStyle: 'gw' })[] {
  return operations.map((op) => ({ ...op, audience, errorStyle: 'gw' as const }))
}
