// The per-org rate of heavy reads (log pages and usage reports), counted apart from the org's requests.

import { GatewayError } from '../errors'
import type { Deps } from '../pipeline/context'

/**
 * Charges one read to the org's own window (GW_LOG_READS_PER_MINUTE, shared by every instance when
 * the limiter is Redis's); 429 `rate_limit_exceeded` with Retry-After past it. Model requests and
 * other orgs are not counted against it, nor it against them (docs/security.md). Redis away, this
 * instance counts it, GW_REDIS_REQUIRED or not: that setting holds the orgs' own limits.
 */
export async function admitLogRead(deps: Deps, orgId: string): Promise<void> {
  const limit = deps.config.logReadsPerMinute
  if (limit === 0) return
  const admission = await deps.limiter.admit([{ key: `logreads:${orgId}`, limit, cost: 1, own: true }])
  if (admission.ok) return
  throw new GatewayError(
    429,
    'rate_limit_exceeded',
    `Too many log and usage reads for org "${orgId}": ${limit} per minute; retry in ${admission.retryAfterSeconds} s`,
    { headers: { 'retry-after': String(admission.retryAfterSeconds) }, scope: 'org' },
  )
}
