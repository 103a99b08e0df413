// GET /v1/logs/:requestId, GET /v1/logs and GET /v1/usage: the org's request log and usage report, for service keys only (pages and reports at the org's log-read rate).

import { parseLogQuery } from '../../admin/log-query'
import { echo, GatewayError, notFound } from '../../errors'
import { handleApiRequest } from '../../pipeline'
import type { AuthedContext, Deps } from '../../pipeline/context'
import { parseUsageQuery, usageReport } from '../../admin/usage-report'
import { admitLogRead } from '../../policy/log-read-limit'
import type { LogEntry } from '../../domain/log-entry'
import { LogEntryAnswer, LogPage, LogQuery, UsageQuery, UsageReport } from '../../schemas/admin-answers'
import { operationRoutes, ownOperations } from '../operation-routes'
import { contextFor } from '../request-context'

async function authorize(authenticate: () => Promise<AuthedContext>): Promise<string> {
  const { identity } = await authenticate()
  if (identity.authMode !== 'GwKey')
    throw new GatewayError(403, 'forbidden', 'Only service keys (GwKey) may read request logs and usage')
  return identity.orgId
}

/** A request id gw minted this long ago may still be in another instance's write queue. */
const IN_FLIGHT_MS = 5000
/** How long a lookup waits for another instance's batch (it writes every 50 ms). */
const WAIT_FOR_OTHERS_MS = 1000

/** Milliseconds since a UUIDv7 request id was minted; undefined for anything else. */
function ageOf(requestId: string): number | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(requestId)) return undefined
  return Date.now() - Number.parseInt(requestId.slice(0, 8) + requestId.slice(9, 13), 16)
}

/**
 * This instance's queue, then the database. With a shared database the entry may have been answered
 * by another instance a moment ago and still wait in its queue: a fresh id is looked up again until
 * that instance's batch lands (read-your-writes across instances, PRODUCT §10).
 */
async function findLog(deps: Deps, orgId: string, requestId: string): Promise<LogEntry | undefined> {
  const entry = deps.logs.pendingEntry(orgId, requestId) ?? (await deps.store.logs.getLog(orgId, requestId))
  const age = ageOf(requestId)
  if (entry || deps.store.kind === 'sqlite' || age === undefined || age > IN_FLIGHT_MS || age < -IN_FLIGHT_MS) return entry
  const deadline = performance.now() + WAIT_FOR_OTHERS_MS
  while (performance.now() < deadline) {
    await Bun.sleep(25)
    const found = deps.logs.pendingEntry(orgId, requestId) ?? (await deps.store.logs.getLog(orgId, requestId))
    if (found) return found
  }
  return undefined
}

const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } })

export const LOG_OPERATIONS = ownOperations('client', [
  { id: 'getLog', method: 'GET', path: '/v1/logs/:requestId', summary: "One of the org's log entries, readable as soon as its answer ended (service keys only)", answer: LogEntryAnswer },
  { id: 'listLogs', method: 'GET', path: '/v1/logs', summary: "A page of the org's request log, newest first (service keys only)", query: LogQuery, answer: LogPage },
  { id: 'getUsage', method: 'GET', path: '/v1/usage', summary: "The org's usage report (service keys only)", query: UsageQuery, answer: UsageReport },
])

export const logRoutes = (deps: Deps) =>
  operationRoutes('log-routes', LOG_OPERATIONS, {
    getLog: ({ request, path, params }) => {
      const ctx = contextFor(request, path)
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const orgId = await authorize(authenticate)
        const requestId = params.requestId as string
        const entry = await findLog(deps, orgId, requestId)
        if (!entry) throw notFound(`No log entry ${echo(requestId)} in this org`)
        return json(entry)
      })
    },
    listLogs: ({ request, path }) => {
      const ctx = contextFor(request, path)
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const q = parseLogQuery(await authorize(authenticate), new URL(request.url).searchParams)
        await admitLogRead(deps, q.orgId)
        await deps.logs.flush()
        return json(await deps.store.logs.queryLogs(q))
      })
    },
    getUsage: ({ request, path }) => {
      const ctx = contextFor(request, path)
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const q = parseUsageQuery(await authorize(authenticate), new URL(request.url).searchParams)
        await admitLogRead(deps, q.orgId)
        await deps.logs.flush()
        return json({ data: await usageReport(deps.store.logs, q) })
      })
    },
  })
