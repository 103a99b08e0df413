// Write-behind queue for request log entries: batched, one transaction per batch, off the hot path.

import type { LogEntry, LogStore } from './types'

export interface LogWriterOptions {
  batchSize?: number
  intervalMs?: number
  /** Entries held in memory at most; past it the oldest are dropped (and counted). */
  maxQueue?: number
  onError?: (err: unknown, attempt: number) => void
}

export class LogWriter {
  private queue: LogEntry[] = []
  /** Entries not yet on disk, by request id, so a lookup right after the response finds them. */
  private readonly pending = new Map<string, LogEntry>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private flushing: Promise<void> | undefined
  private failures = 0
  private closed = false
  /** Counters for /health and /metrics; a spooling writer counts what it spools in `spooled`. */
  readonly stats = { written: 0, dropped: 0, retries: 0, spooled: 0 }
  private readonly batchSize: number
  private readonly intervalMs: number
  private readonly maxQueue: number

  constructor(
    private readonly store: LogStore,
    private readonly opts: LogWriterOptions = {},
  ) {
    // Large transactions cost the least CPU per entry (27–29 µs at 500, 45–51 µs at 32: every commit
    // rewrites the same index pages) but hold the event loop longer; see docs/benchmarks.md.
    this.batchSize = opts.batchSize ?? 500
    this.intervalMs = opts.intervalMs ?? 50
    this.maxQueue = opts.maxQueue ?? 200_000
  }

  write(entry: LogEntry): void {
    this.queue.push(entry)
    this.pending.set(entry.requestId, entry)
    if (this.queue.length > this.maxQueue) {
      const dropped = this.queue.shift()
      if (dropped) this.pending.delete(dropped.requestId)
      this.stats.dropped++
    }
    if (this.closed) return
    if (this.queue.length >= this.batchSize) this.schedule(0)
    else this.schedule(this.intervalMs)
  }

  /** An entry still waiting in the queue (read-your-writes for GET /v1/logs/:id). */
  pendingEntry(orgId: string, requestId: string): LogEntry | undefined {
    const e = this.pending.get(requestId)
    return e && e.orgId === orgId ? e : undefined
  }

  get queued(): number {
    return this.queue.length
  }

  /** Writes everything queued so far (one drain at a time; a flush during a drain joins it). */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      await this.writeBatch()
      if (this.failures) return
      // Let requests that arrived meanwhile run before the next slice (see batchSize).
      if (this.queue.length && !this.closed) await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  /** Flushes, retrying failed batches a few times; what still fails is counted as dropped. */
  async close(retries = 5): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    for (let i = 0; i <= retries && this.queue.length; i++) {
      await this.flush()
      if (this.queue.length) await Bun.sleep(100 * (i + 1))
    }
    this.stats.dropped += this.queue.length
    this.queue = []
    this.pending.clear()
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined && ms > 0) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.flush()
    }, ms)
    this.timer.unref()
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue.slice(0, this.batchSize)
    try {
      await this.store.insertLogs(batch)
      this.queue.splice(0, batch.length)
      for (const e of batch) this.pending.delete(e.requestId)
      this.stats.written += batch.length
      this.failures = 0
    } catch (err) {
      // Busy or locked database: keep the batch, retry with backoff. Inserts are idempotent.
      this.failures++
      this.stats.retries++
      this.opts.onError?.(err, this.failures)
      if (!this.closed) this.schedule(Math.min(5000, 50 * 2 ** this.failures))
    }
  }
}
