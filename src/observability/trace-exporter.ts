// Batches finished spans and POSTs them to the OTLP/HTTP endpoint off the request path: a full queue
// or a collector that is down only costs counted spans, never a request's time.

import type { OtelConfig } from '../config'
import { version as GW_VERSION } from '../../package.json'
import { FlushTimer } from '../flush-timer'
import { encodeJson, encodeProtobuf, type ExportResource, type SpanData } from './otlp-encode'

/** The resource every span is exported under: service.name from OTEL_SERVICE_NAME, plus OTEL_RESOURCE_ATTRIBUTES. */
export function traceResource(config: OtelConfig): ExportResource {
  return {
    attributes: {
      ...config.resource,
      'service.name': config.serviceName,
      'service.version': GW_VERSION,
      'telemetry.sdk.name': 'gw',
      'telemetry.sdk.language': 'js',
    },
    scope: { name: 'gw', version: GW_VERSION },
  }
}

export interface ExporterOptions {
  /** Spans held at most while the collector is slow or down; past it new spans are dropped. */
  maxQueue?: number
  maxBatch?: number
  intervalMs?: number
}

export class TraceExporter {
  private queue: SpanData[] = []
  private readonly timer = new FlushTimer(() => void this.flush())
  private flushing: Promise<void> | undefined
  readonly stats = { exported: 0, dropped: 0, failedExports: 0 }
  private readonly maxQueue: number
  private readonly maxBatch: number
  private readonly intervalMs: number

  constructor(
    private readonly config: OtelConfig,
    private readonly resource: ExportResource,
    opts: ExporterOptions = {},
    private readonly fetchFn: typeof fetch = fetch,
  ) {
    this.maxQueue = opts.maxQueue ?? 4096
    this.maxBatch = opts.maxBatch ?? 512
    this.intervalMs = opts.intervalMs ?? 1000
  }

  /** Queues finished spans; never waits and never throws. */
  add(spans: readonly SpanData[]): void {
    for (const s of spans) {
      if (this.queue.length >= this.maxQueue) this.stats.dropped++
      else this.queue.push(s)
    }
    if (this.queue.length >= this.maxBatch) this.timer.schedule(0)
    else this.timer.schedule(this.intervalMs)
  }


  /** Sends what is queued, one batch at a time; one export in flight at most (later calls share it). */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async drain(): Promise<void> {
    while (this.queue.length) await this.send(this.queue.splice(0, this.maxBatch))
  }

  private async send(batch: SpanData[]): Promise<void> {
    const proto = this.config.protocol === 'http/protobuf'
    try {
      const res = await this.fetchFn(this.config.tracesUrl, {
        method: 'POST',
        headers: { ...this.config.headers, 'content-type': proto ? 'application/x-protobuf' : 'application/json' },
        body: proto ? encodeProtobuf(this.resource, batch) : encodeJson(this.resource, batch),
        signal: AbortSignal.timeout(this.config.timeoutMs),
      })
      await res.arrayBuffer().catch(() => undefined)
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      this.stats.exported += batch.length
    } catch {
      // The collector is down, slow or refusing: the batch is lost and counted, nothing else.
      this.stats.failedExports++
      this.stats.dropped += batch.length
    }
  }

  /** Sends what is left, waiting at most `waitMs` for a slow collector (shutdown must not hang on it). */
  async close(waitMs = 2000): Promise<void> {
    this.timer.cancel()
    await Promise.race([this.flush(), Bun.sleep(waitMs)])
  }
}
