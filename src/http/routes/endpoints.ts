// The routes of every declared endpoint (src/apis/index.ts): each POST path into the runner, with the
// body read only once the caller is authenticated (PRODUCT §4).

import { Elysia } from 'elysia'
import { ENDPOINTS } from '../../apis'
import { runEndpoint } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { type EndpointDeclaration, labelOf } from '../../pipeline/endpoint'
import { contextFor } from '../request-context'
import { withBody } from './request-body'

export function endpointRoutes(deps: Deps, endpoints: readonly EndpointDeclaration[] = ENDPOINTS) {
  const app = new Elysia({ name: 'endpoint-routes' })
  for (const e of endpoints) {
    const label = labelOf(e)
    app.post(
      e.path,
      ({ request, server, params }) =>
        withBody(deps, request, server, e.whenEmpty, (readBody) =>
          runEndpoint(deps, e, contextFor(request, label, e), { readBody, params, url: request.url }),
        ),
      { parse: 'none' },
    )
  }
  return app
}
