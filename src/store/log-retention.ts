// Log retention (PRODUCT §11): prunes raw log entries older than GW_LOG_RETENTION_DAYS in small
// batches in the background, yielding between batches so requests never wait; roll-ups stay. The
// audit log (§18) is pruned the same way by its own GW_AUDIT_RETENTION_DAYS (forever by default).

import type { LogStore } from './types'

/** What retention prunes: the request log, or the audit log (`{ pruneLogs: (b, n) => audit.prune(b, n) }`). */
export type Prunable = Pick<LogStore, 'pruneLogs'>

const DAY_MS = 86_400_000
/** Entries deleted per transaction: a few milliseconds of work on the writer connection. */
const PRUNE_BATCH = 500

/** Deletes every entry created before `cutoff` (epoch ms), one small batch at a time; returns how many. */
export async function pruneBefore(logs: Prunable, cutoff: number, batch = PRUNE_BATCH): Promise<number> {
  let total = 0
  for (;;) {
    const n = await logs.pruneLogs(cutoff, batch)
    total += n
    if (n < batch) return total
    await new Promise((resolve) => setTimeout(resolve, 1)) // let requests and log batches in between
  }
}

export interface LogRetentionOptions {
  /** Time between two pruning rounds. */
  intervalMs?: number
  now?: () => number
  onError?: (err: unknown) => void
}

export interface LogRetention {
  /** Prunes what is past retention now (also what the timer does). */
  run(): Promise<number>
  stop(): Promise<void>
}

/** Starts pruning entries older than `days` (0 keeps everything: nothing is started). */
export function startLogRetention(logs: Prunable, days: number, opts: LogRetentionOptions = {}): LogRetention {
  const now = opts.now ?? Date.now
  let running: Promise<number> | undefined
  const run = () =>
    (running ??= pruneBefore(logs, now() - days * DAY_MS)
      .catch((err) => {
        opts.onError?.(err) // a busy database: the next round tries again
        return 0
      })
      .finally(() => {
        running = undefined
      }))
  const timer = days > 0 ? setInterval(run, opts.intervalMs ?? 60_000) : undefined
  timer?.unref()
  return {
    run: () => (days > 0 ? run() : Promise.resolve(0)),
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
