// The one observer of the pipeline: each finished API request feeds the metrics, the access log and
// (with tracing on) the request's span; called from the pipeline's composition point only.

import type { LogEntry } from '../store/types'
import type { AccessLog } from './access-log'
import type { GatewayMetrics } from './gateway-metrics'

export interface FinishedRequest {
  entry: LogEntry
  /** Identity was established (401s have none). */
  authenticated: boolean
  /** performance.now() at arrival. */
  start: number
  known: boolean | undefined
  rateLimitScope: string | undefined
}

export class Observer {
  constructor(
    readonly metrics: GatewayMetrics,
    readonly accessLog: AccessLog,
  ) {}

  requestFinished(r: FinishedRequest): void {
    this.metrics.request({
      entry: r.entry,
      seconds: (performance.now() - r.start) / 1000,
      known: r.known,
      rateLimitScope: r.rateLimitScope,
    })
    this.accessLog.request(r.entry, r.authenticated)
  }

  close(): void {
    this.metrics.close()
    this.accessLog.flush()
  }
}
