// One POST route into the pipeline: request context, the JSON body read with gw's limits, no idle cut-off.

import { Elysia } from 'elysia'
import type { Deps, RequestContext } from '../../pipeline/context'
import { contextFor, readJsonBody } from '../request-context'

export type PipelineHandler = (deps: Deps, ctx: RequestContext, raw: unknown) => Promise<Response>

export const pipelinePost = (deps: Deps, path: string, handle: PipelineHandler) =>
  new Elysia({ name: `post ${path}` }).post(
    path,
    async ({ request, server }) => {
      const ctx = contextFor(request, path)
      ctx.rawBody = await readJsonBody(request, deps.config.maxBodyBytes)
      // The answer may take long to start and streams may go quiet: no idle cut-off from here on.
      server?.timeout(request, 0)
      return handle(deps, ctx, ctx.rawBody.value)
    },
    { parse: 'none' },
  )
