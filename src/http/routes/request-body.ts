// The body reader of a request into the stages, which the runner calls only once the caller is
// authenticated (PRODUCT §4); from then on no idle cut-off. The bytes its body holds count against
// GW_MAX_INFLIGHT_BODY_BYTES until the request ends.

import type { Server } from 'bun'
import type { BodyReader } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { type BodyShare, readJsonBody } from '../request-context'

/**
 * Runs a pipeline request with its body reader (`whenEmpty`: what an empty body stands for, as
 * prompt runs allow). The request's share of the body budget is released in this `finally`, or
 * when its log entry is written if that comes later (a stream).
 */
export async function withBody(
  deps: Deps,
  request: Request,
  server: Server<unknown> | null,
  whenEmpty: unknown,
  run: (readBody: BodyReader) => Promise<Response>,
): Promise<Response> {
  const share = deps.bodies.share()
  try {
    return await run(bodyReader(deps, request, server, share, whenEmpty))
  } finally {
    share.release()
  }
}

function bodyReader(deps: Deps, request: Request, server: Server<unknown> | null, share: BodyShare, whenEmpty?: unknown): BodyReader {
  return async () => {
    // The text is kept only up to what the log stores of it (a larger body is logged as a preview).
    const body = await readJsonBody(request, deps.config.maxBodyBytes, whenEmpty, share, deps.config.logBodyMaxBytes)
    // The answer may take long to start and streams may go quiet: no idle cut-off from here on.
    server?.timeout(request, 0)
    return { ...body, release: share.keep() }
  }
}
