// GET /openapi.json (the OpenAPI 3.1 document of the operations a listener serves, PRODUCT §16) and
// GET /docs (a page that renders it, embedded in the binary, loading nothing from another host); no credential.

import { createHash } from 'node:crypto'
import { Type as t } from '@sinclair/typebox'
import pkg from '../../../package.json' with { type: 'json' }
import type { ApiOperation } from '../../schemas/api-operation'
import type { RouteLike } from '../methods'
import page from '../docs-page.html' with { type: 'text' }
import { openApiDocument } from '../openapi'
import { operationRoutes, ownOperations } from '../operation-routes'

/** Imported as text (the type Bun declares for `.html` is the bundle it makes without `type: 'text'`). */
const DOCS_PAGE = page as unknown as string

/** The page runs its one inline script (by its hash), fetches only from its own origin, and is never framed. */
const DOCS_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${createHash('sha256').update(/<script>([\s\S]*?)<\/script>/.exec(DOCS_PAGE)?.[1] ?? '').digest('base64')}'`,
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

export const DOC_OPERATIONS = ownOperations('public', [
  { id: 'openApiDocument', method: 'GET', path: '/openapi.json', summary: 'This document', answer: t.Object({ openapi: t.String() }, { additionalProperties: true }) },
  { id: 'docsPage', method: 'GET', path: '/docs', summary: 'This document rendered for reading', answer: t.String({ contentMediaType: 'text/html' }) },
])

const INFO = {
  title: 'gw',
  version: pkg.version,
  description: 'A self-hosted AI gateway: the client APIs (OpenAI chat completions, Anthropic Messages, OpenAI Responses, embeddings, saved prompts), the logs API, health and the admin API.',
}

/** The operations of `declared` that `routes` (an app's) serve, without the admin API when it is off (no GW_ADMIN_TOKEN). */
export function servedOperations(routes: readonly RouteLike[], declared: readonly ApiOperation[], adminApi: boolean): ApiOperation[] {
  const served = new Set(routes.map((r) => `${r.method} ${r.path}`))
  return declared.filter((op) => served.has(`${op.method} ${op.path}`) && (adminApi || !op.path.startsWith('/admin')))
}

/** `operations`: what the listener serves besides these two routes, asked on the first request (the app is complete by then). */
export function openApiRoutes(operations: () => readonly ApiOperation[]) {
  let doc: string | undefined
  return operationRoutes('openapi-routes', DOC_OPERATIONS, {
    openApiDocument: ({ request }) => {
      doc ??= JSON.stringify(openApiDocument([...operations(), ...DOC_OPERATIONS], INFO))
      return new Response(doc, { headers: { 'content-type': 'application/json' } })
    },
    docsPage: ({ request }) =>
      new Response(DOCS_PAGE, {
        headers: {
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': DOCS_CSP,
          'x-content-type-options': 'nosniff',
        },
      }),
  })
}
