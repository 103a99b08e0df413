// Write-behind queue for request log entries: batched, one transaction per batch, off the hot path.

import { FlushTimer } from '../flush-timer'
import { StoreUnavailableError } from './errors'
import type { LogSpool } from './log-spool'
import type { LogEntry } from '../domain/log-entry'
import type { LogStore } from './types'

export interface LogWriterOptions {
  batchSize?: number
  intervalMs?: number
  /** Entries held in memory at most; past it the oldest are dropped (and counted). */
  maxQueue?: number
  onError?: (err: unknown, attempt: number) => void
  /** Where batches go while the database is unreachable (GW_SPOOL_DIR); without one they wait in memory. */
  spool?: LogSpool
  /**
   * True while the gateway is nearly idle (a request or two in flight). A short queue is then written
   * in slices of QUIET_SLICE entries with requests let through between them, so no request waits out a
   * whole batch; under load, with a backlog past QUIET_QUEUE, or when retrying after a failed write,
   * whole batches, the cheapest per entry (slices cost more per entry; a writer that falls behind grows
   * the process; and each commit writes its index pages to the WAL again, so a backlog caught up in
   * slices needs several times the disk of one batch: test/reliability/storage-faults.test.ts, "a disk
   * that fills up at run time").
   */
  quiet?: () => boolean
  /**
   * Whether a backlog may go in the store's larger transactions (LogStore.catchUpBatches); on by
   * default, as on the log thread. A writer on the serving thread turns it off: each of its
   * transactions pauses every request.
   */
  catchUp?: boolean
  /**
   * Entries that left the writer's hands: written, moved to the spool, or given up (dropped). The log
   * thread acknowledges them to the serving thread from here (src/store/log-path.ts).
   */
  onSettled?: (entries: readonly LogEntry[], how: 'written' | 'spooled' | 'dropped') => void
  /** The spool was written to the database, to its end (its counters changed with nothing settled). */
  onDrained?: () => void
}

/** Entries per transaction while quiet: a slice short enough that a request arriving meanwhile barely waits
 * (the unloaded p99 in docs/benchmarks.md shows it). */
const QUIET_SLICE = 10
/** The longest queue written in slices: past it the writer is behind, and catches up in whole batches. */
const QUIET_QUEUE = 250

export class LogWriter {
  private queue: LogEntry[] = []
  /** Entries not yet on disk, by request id, so a lookup right after the response finds them. */
  private readonly pending = new Map<string, LogEntry>()
  private readonly timer = new FlushTimer(() => void this.flush())
  private flushing: Promise<void> | undefined
  private failures = 0
  private closed = false
  /** While the database is unreachable: batches go straight to the spool until this time (ms), then it is tried again. */
  private retryAt = 0
  /** Counters for /health and /metrics; a spooling writer counts what it spools in `spooled`. */
  readonly stats = { written: 0, dropped: 0, retries: 0, spooled: 0 }
  private readonly batchSize: number
  private readonly intervalMs: number
  private readonly maxQueue: number

  constructor(
    private readonly store: LogStore,
    private readonly opts: LogWriterOptions = {},
  ) {
    // Large transactions cost the least CPU per entry (every commit rewrites the same index pages) but
    // hold the event loop longer, which the quiet slices make up for; the sustained rate is measured by
    // `writerRate` in bench/log-store.ts (docs/benchmarks.md "Log store").
    this.batchSize = opts.batchSize ?? 500
    this.intervalMs = opts.intervalMs ?? 50
    this.maxQueue = opts.maxQueue ?? 200_000
    // Entries spooled before a restart are written as soon as the database answers.
    if (opts.spool && !opts.spool.empty) this.timer.schedule(0)
  }

  write(entry: LogEntry): void {
    this.queue.push(entry)
    this.pending.set(entry.requestId, entry)
    if (this.queue.length > this.maxQueue) {
      const dropped = this.queue.shift()
      if (dropped) {
        this.pending.delete(dropped.requestId)
        this.opts.onSettled?.([dropped], 'dropped')
      }
      this.stats.dropped++
    }
    if (this.closed) return
    if (this.queue.length >= this.batchSize) this.timer.schedule(0)
    else this.timer.schedule(this.intervalMs)
  }

  /** An entry still waiting in the queue (read-your-writes for GET /v1/logs/:id). */
  pendingEntry(orgId: string, requestId: string): LogEntry | undefined {
    const e = this.pending.get(requestId)
    return e && e.orgId === orgId ? e : undefined
  }

  /** The last batch failed: the database refuses entries for now (they wait and are retried). */
  get failing(): boolean {
    return this.failures > 0
  }

  get queued(): number {
    return this.queue.length
  }

  /** Entries waiting in the spool directory for the database now (`stats.spooled` counts all ever spooled). */
  get inSpool(): number {
    return this.opts.spool?.size ?? 0
  }

  /** Writes everything queued so far, what waits in the spool first (one drain at a time; a flush during a drain joins it). */
  flush(): Promise<void> {
    this.flushing ??= this.writeAll().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  /** Flushes, retrying failed batches a few times; what still fails goes to the spool, else is counted as dropped. */
  async close(retries = 5): Promise<void> {
    this.closed = true
    this.timer.cancel()
    for (let i = 0; i <= retries && this.queue.length; i++) {
      await this.flush()
      if (this.queue.length && !this.toSpool()) await Bun.sleep(100 * (i + 1))
    }
    this.stats.dropped += this.queue.length
    if (this.queue.length) this.opts.onSettled?.(this.queue, 'dropped')
    this.queue = []
    this.pending.clear()
  }

  private async writeAll(): Promise<void> {
    const spool = this.opts.spool
    // Order: what waits in the spool is older than anything queued, so it goes first.
    if (spool && !spool.empty) {
      if (performance.now() < this.retryAt || !(await this.drainSpool(spool))) {
        this.toSpool()
        if (!this.closed) this.timer.schedule(Math.max(1, this.retryAt - performance.now()))
        return
      }
    }
    while (this.queue.length && (await this.writeBatches(this.sliceSize()))) {
      // Let requests that arrived meanwhile run before the next slice (see batchSize).
      if (this.queue.length && !this.closed) await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Entries in the next transaction: a slice while the gateway is quiet, the queue short and the last
   * write good; a batch; while more than one waits, the backlog in as many transactions as the store
   * takes at once, each up to the store's catchUpBatches batches (see catchUp).
   */
  private sliceSize(): number {
    if (this.failures === 0 && this.queue.length <= QUIET_QUEUE && this.opts.quiet?.()) return QUIET_SLICE
    const batches = this.opts.catchUp === false ? 1 : (this.store.catchUpBatches ?? 1)
    const share = Math.ceil(this.queue.length / Math.max(1, this.store.writeConcurrency ?? 1))
    return Math.max(this.batchSize, Math.min(share, this.batchSize * batches))
  }

  /** Moves the whole queue to the spool (after what is there); false without a spool. */
  private toSpool(): boolean {
    const spool = this.opts.spool
    if (!spool || !this.queue.length) return false
    spool.append(this.queue)
    this.stats.spooled += this.queue.length
    this.opts.onSettled?.(this.queue, 'spooled')
    // Entries stay readable by id from memory while they wait, as long as memory allows.
    if (this.pending.size > this.maxQueue) for (const e of this.queue) this.pending.delete(e.requestId)
    this.queue = []
    return true
  }

  private async drainSpool(spool: LogSpool): Promise<boolean> {
    try {
      // What arrives while a long spool is replayed joins it on disk, after it: new entries neither wait in
      // memory behind the replay (holding requests on back-pressure) nor are lost if the process dies meanwhile.
      await spool.replay(
        async (batch) => {
          await this.store.insertLogs(batch)
          for (const e of batch) this.pending.delete(e.requestId)
          this.stats.written += batch.length
        },
        this.batchSize,
        () => this.toSpool(),
      )
      this.opts.onDrained?.()
      this.failures = 0
      return true
    } catch (err) {
      this.failed(err)
      return false
    }
  }

  /**
   * Writes the next batches, as many at once as the store takes (writeConcurrency); false when one
   * failed: its entries wait in the queue, or in the spool when the database is unreachable.
   */
  private async writeBatches(size: number): Promise<boolean> {
    const batches: LogEntry[][] = []
    for (let i = 0; i < Math.max(1, this.store.writeConcurrency ?? 1) && i * size < this.queue.length; i++)
      batches.push(this.queue.slice(i * size, (i + 1) * size))
    const results = await Promise.allSettled(batches.map((b) => this.store.insertLogs(b)))
    let failure: { reason: unknown } | undefined
    const written = new Set<LogEntry>()
    results.forEach((r, i) => {
      if (r.status === 'rejected') {
        failure ??= { reason: r.reason }
        return
      }
      const batch = batches[i] as LogEntry[]
      for (const e of batch) {
        written.add(e)
        this.pending.delete(e.requestId)
      }
      this.stats.written += batch.length
      this.opts.onSettled?.(batch, 'written')
    })
    if (!failure) {
      this.queue.splice(0, written.size)
      this.failures = 0
      return true
    }
    // Unreachable: to the spool, so nothing depends on this process staying up. Busy or locked:
    // keep the batch, retry with backoff. Inserts are idempotent either way.
    if (written.size) this.queue = this.queue.filter((e) => !written.has(e))
    if (isEntryFault(failure.reason)) return this.writeAlone(batches.flat().filter((e) => !written.has(e)))
    return this.writeFailed(failure.reason)
  }

  /**
   * The entries of a batch that failed with an entry's fault (isEntryFault), written one at a time: one
   * that fails alone is written without its bodies, and given up (counted as dropped) if that fails
   * too, so it never holds the entries behind it. A database error on the way is handled as any failed
   * write (the rest wait, or go to the spool).
   */
  private async writeAlone(entries: readonly LogEntry[]): Promise<boolean> {
    for (const e of entries) {
      let how: 'written' | 'dropped' = 'written'
      try {
        await this.insertAlone(e)
      } catch (err) {
        if (!isEntryFault(err)) return this.writeFailed(err)
        console.error(`gw: the log entry of request ${e.requestId} cannot be written (${err instanceof Error ? err.message : String(err)}): given up`)
        how = 'dropped'
      }
      this.queue.splice(this.queue.indexOf(e), 1)
      this.pending.delete(e.requestId)
      this.stats[how]++
      this.opts.onSettled?.([e], how)
    }
    this.failures = 0
    return true
  }

  private async insertAlone(e: LogEntry): Promise<void> {
    try {
      await this.store.insertLogs([e])
    } catch (err) {
      if (!isEntryFault(err) || (e.requestBody === undefined && e.responseBody === undefined)) throw err
      console.error(`gw: the bodies of request ${e.requestId}'s log entry cannot be written (${err instanceof Error ? err.message : String(err)}): it is logged without them`)
      e.requestBody = undefined
      e.responseBody = undefined
      await this.store.insertLogs([e])
    }
  }

  /** A write the database failed: retried after a backoff; its entries go to the spool when the database is unreachable. */
  private writeFailed(err: unknown): false {
    this.failed(err)
    if (err instanceof StoreUnavailableError) this.toSpool()
    return false
  }

  private failed(err: unknown): void {
    this.failures++
    this.stats.retries++
    this.opts.onError?.(err, this.failures)
    const backoff = Math.min(5000, 50 * 2 ** this.failures)
    this.retryAt = performance.now() + backoff
    if (!this.closed) this.timer.schedule(backoff)
  }
}

/**
 * A JavaScript error while the store turns an entry into rows (a body that is not the JSON it stands
 * for, say) is that entry's fault, not the database's: retried, it would hold every entry behind it
 * for ever, and the serving thread behind a full queue.
 */
function isEntryFault(err: unknown): boolean {
  return err instanceof SyntaxError || err instanceof TypeError || err instanceof RangeError
}
