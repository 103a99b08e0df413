// GET /health (each check: store, redis, log writer), /health/live and /health/ready for orchestrators; no authentication.

import type { Deps, HealthCheck as Check } from '../../pipeline/context'
import { HealthAnswer } from '../../schemas/admin-answers'
import { operationRoutes, ownOperations } from '../operation-routes'
import { requestIdOf } from '../request-context'

type CheckStatus = Check['status']

/** A store that does not answer within this is reported down. */
const STORE_PING_MS = 1000

async function storeCheck(deps: Deps): Promise<Check> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${STORE_PING_MS} ms`)), STORE_PING_MS)
    })
    await Promise.race([deps.store.ping(), timeout])
    return deps.store.ready ? { status: 'ok' } : { status: 'down', message: 'migrations not done yet' }
  } catch (err) {
    return { status: 'down', message: `${deps.store.kind} unreachable: ${err instanceof Error ? err.message : String(err)}` }
  } finally {
    clearTimeout(timer)
  }
}

function logWriterCheck(deps: Deps): Check & Record<string, unknown> {
  const counters = { queued: deps.logs.queued, inSpool: deps.logs.inSpool, ...deps.logs.stats }
  if (deps.logs.inSpool)
    return { status: 'degraded', message: `the database is unreachable; ${deps.logs.inSpool} log entries wait in the spool`, ...counters }
  if (deps.logs.failing) return { status: 'degraded', message: 'the database refuses log entries; they wait and are retried', ...counters }
  return { status: 'ok', ...counters }
}

function json(body: unknown, status: number, requestId: string): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  })
}

const DOWN = { status: 503, description: 'Down (not ready): the same body, `ok: false`' }

/** /health and its two probes: no credential, 503 with the same body when down. */
export const HEALTH_OPERATIONS = ownOperations('public', [
  { id: 'health', method: 'GET', path: '/health', summary: 'Each check (store, Redis, log writer) and the overall status', answer: HealthAnswer, alsoAnswers: DOWN },
  { id: 'healthLive', method: 'GET', path: '/health/live', summary: 'Liveness: the process answers', answer: HealthAnswer },
  { id: 'healthReady', method: 'GET', path: '/health/ready', summary: 'Readiness: the store answers and is migrated', answer: HealthAnswer, alsoAnswers: DOWN },
])

export const healthRoutes = (deps: Deps) =>
  operationRoutes('health-routes', HEALTH_OPERATIONS, {
    health: async ({ request }) => {
      const requestId = requestIdOf(request) ?? ''
      const store = await storeCheck(deps)
      const redis: Check = deps.shared ? deps.shared.check() : { status: 'disabled' }
      const logWriter = logWriterCheck(deps)
      // Down only when nothing can be served: the store never became ready. An unreachable store
      // after start, or Redis away, is degraded (cached orgs are served, entries wait).
      const status: CheckStatus = !deps.store.ready
        ? 'down'
        : [store, redis, logWriter].some((c) => c.status === 'down' || c.status === 'degraded')
          ? 'degraded'
          : 'ok'
      return json({ ok: status !== 'down', status, checks: { store, redis, logWriter }, requestId }, status === 'down' ? 503 : 200, requestId)
    },
    healthLive: ({ request }) => {
      const requestId = requestIdOf(request) ?? ''
      return json({ ok: true, status: 'ok', requestId }, 200, requestId)
    },
    healthReady: async ({ request }) => {
      const requestId = requestIdOf(request) ?? ''
      const store = await storeCheck(deps)
      const ok = store.status === 'ok'
      return json({ ok, status: ok ? 'ok' : 'down', checks: { store }, requestId }, ok ? 200 : 503, requestId)
    },
  })
