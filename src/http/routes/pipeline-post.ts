// One POST route into the pipeline: the request context, and a body reader the pipeline calls only
// once the caller is authenticated (PRODUCT §4); from then on no idle cut-off.

import type { Server } from 'bun'
import { Elysia } from 'elysia'
import type { BodyReader } from '../../pipeline'
import type { Deps, RequestContext } from '../../pipeline/context'
import { contextFor, readJsonBody } from '../request-context'

export type PipelineHandler = (deps: Deps, ctx: RequestContext, readBody: BodyReader) => Promise<Response>

/** The body reader of a pipeline request (`whenEmpty`: what an empty body stands for, as prompt runs allow). */
export function bodyReader(deps: Deps, request: Request, server: Server<unknown> | null, whenEmpty?: unknown): BodyReader {
  return async () => {
    const body = await readJsonBody(request, deps.config.maxBodyBytes, whenEmpty)
    // The answer may take long to start and streams may go quiet: no idle cut-off from here on.
    server?.timeout(request, 0)
    return body
  }
}

export const pipelinePost = (deps: Deps, path: string, handle: PipelineHandler) =>
  new Elysia({ name: `post ${path}` }).post(path, ({ request, server }) => handle(deps, contextFor(request, path), bodyReader(deps, request, server)), {
    parse: 'none',
  })
