// WAL checkpoints of a file database on a worker thread with its own connection, every few hundred
// milliseconds, so the page copies and fsyncs never block the event loop that serves requests. The
// connections that serve requests keep an automatic checkpoint only as a backstop.

import type { Database } from 'bun:sqlite'

/** WAL pages after which a committing connection checkpoints itself (SQLite's default is 1,000). */
const BACKSTOP_PAGES = 10_000

type ToThread = { kind: 'start'; path: string; everyMs: number } | { kind: 'stop' }

/**
 * The thread's whole program. It runs from its source text (see startCheckpointer), so it must use
 * nothing from this module's scope.
 */
function checkpointThread(): void {
  const scope = globalThis as unknown as Worker
  const sqlite = import('bun:sqlite')
  let db: Database | undefined
  let timer: ReturnType<typeof setInterval> | undefined
  let stopped = false
  const checkpoint = () => {
    try {
      // PASSIVE: copies what no reader still needs and never waits for a lock; the rest comes next time.
      db?.exec('PRAGMA wal_checkpoint(PASSIVE)')
    } catch {
      // Busy, locked or a full disk: the WAL keeps the data; the next round (or the backstop) copies it.
    }
  }
  // Set at once, so no message arrives before there is a handler.
  scope.onmessage = async (ev: MessageEvent<ToThread>) => {
    const m = ev.data
    if (m.kind === 'start') {
      const { Database: Db } = await sqlite
      if (stopped) return
      try {
        db = new Db(m.path, { readwrite: true, create: false })
        db.exec('PRAGMA busy_timeout = 0')
        timer = setInterval(checkpoint, m.everyMs)
      } catch {
        db = undefined // cannot open it here: the backstop checkpoints alone
      }
      return
    }
    stopped = true
    clearInterval(timer)
    db?.close()
    scope.postMessage('stopped')
  }
}

export interface Checkpointer {
  stop(): Promise<void>
}

export function startCheckpointer(path: string, connections: Database[], everyMs = 250): Checkpointer {
  for (const c of connections) c.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`)
  // From source text, not a module path: a compiled binary resolves worker modules by other rules.
  const source = URL.createObjectURL(new Blob([`(${checkpointThread.toString()})()`], { type: 'text/javascript' }))
  // Not ref'd: it never keeps the process alive. smol: it runs one pragma, it needs no big heap.
  const options: Bun.WorkerOptions = { ref: false, smol: true }
  const worker = new Worker(source, options)
  worker.onerror = (e) => console.error(`gw: the WAL checkpoint thread failed (${e.message}); the writer checkpoints on its own`)
  worker.postMessage({ kind: 'start', path, everyMs } satisfies ToThread)
  return {
    async stop() {
      // Let it close its connection (no descriptor left behind), then end the thread.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000)
        worker.onmessage = () => {
          clearTimeout(timer)
          resolve()
        }
        worker.postMessage({ kind: 'stop' } satisfies ToThread)
      })
      worker.terminate()
      URL.revokeObjectURL(source)
    },
  }
}
