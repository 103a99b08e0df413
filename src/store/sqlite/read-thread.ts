// Heavy reads (log pages, stats, usage reports) on a worker thread with its own read-only connection,
// so a long query never holds the event loop that serves requests (WAL lets it read beside the writer).

import type { Database, SQLQueryBindings } from 'bun:sqlite'

/** Runs one read statement and gives its rows: on this thread or on the read thread. */
export interface SqlReader {
  all<T>(sql: string, args: SQLQueryBindings[]): Promise<T[]>
}

/** Reads on the caller's thread (an in-memory database, which no other connection can see). */
export function inProcessReader(db: Database): SqlReader {
  return {
    async all<T>(sql: string, args: SQLQueryBindings[]) {
      return db.query<T, SQLQueryBindings[]>(sql).all(...args)
    },
  }
}

type ToThread = { kind: 'open'; path: string } | { kind: 'read'; id: number; sql: string; args: SQLQueryBindings[] } | { kind: 'stop' }
type FromThread = { id: number; rows: unknown[] } | { id: number; error: string; code?: string } | { kind: 'stopped' }

/**
 * The thread's whole program. It runs from its source text (as the checkpointer's does), so it must
 * use nothing from this module's scope. Messages are handled in the order they came.
 */
function readThread(): void {
  const scope = globalThis as unknown as Worker
  const sqlite = import('bun:sqlite')
  let db: Database | undefined
  let openError: string | undefined
  scope.onmessage = async (ev: MessageEvent<ToThread>) => {
    const m = ev.data
    const { Database: Db } = await sqlite
    if (m.kind === 'open') {
      try {
        db = new Db(m.path, { readonly: true })
        // Off the event loop, a short wait for a lock (a WAL recovery) costs no one else anything.
        db.exec('PRAGMA busy_timeout = 5000')
      } catch (err) {
        openError = (err as Error).message
      }
      return
    }
    if (m.kind === 'stop') {
      db?.close()
      db = undefined
      scope.postMessage({ kind: 'stopped' })
      return
    }
    try {
      if (!db) throw new Error(`the read connection did not open: ${openError ?? 'stopped'}`)
      scope.postMessage({ id: m.id, rows: db.query(m.sql).all(...m.args) })
    } catch (err) {
      scope.postMessage({ id: m.id, error: (err as Error).message, code: (err as { code?: string }).code })
    }
  }
}

export interface ReadThread extends SqlReader {
  stop(): Promise<void>
}

/**
 * The read thread, started by the first read rather than with the store: a gateway that nobody reads
 * logs from (most of the time, most of them) holds no second JavaScript VM and connection for it.
 */
export function lazyReadThread(path: string, fallback: Database): ReadThread {
  let thread: ReadThread | undefined
  let stopped = false
  return {
    all<T>(sql: string, args: SQLQueryBindings[]): Promise<T[]> {
      // After stop, as the thread itself does: on the serving connection.
      if (stopped) return inProcessReader(fallback).all<T>(sql, args)
      thread ??= startReadThread(path, fallback)
      return thread.all<T>(sql, args)
    },
    async stop() {
      stopped = true
      await thread?.stop()
    },
  }
}

/**
 * Starts the read thread on the database file at `path`. Should the thread die, the reads waiting
 * on it fail and later ones run on `fallback` (the serving connection), so reads keep working.
 */
export function startReadThread(path: string, fallback: Database): ReadThread {
  // From source text, not a module path: a compiled binary resolves worker modules by other rules.
  const source = URL.createObjectURL(new Blob([`(${readThread.toString()})()`], { type: 'text/javascript' }))
  // Ref'd only while a read waits on it: an idle thread never keeps the process alive, a waiting read
  // does (a CLI command has no server to keep it running).
  const worker = new Worker(source, { ref: false } satisfies Bun.WorkerOptions)
  const handle = worker as unknown as Pick<Bun.Worker, 'ref' | 'unref'>
  const waiting = new Map<number, { resolve: (rows: unknown[]) => void; reject: (err: Error) => void }>()
  let nextId = 0
  let onStopped: (() => void) | undefined
  let inProcess: SqlReader | undefined
  worker.onmessage = (ev: MessageEvent<FromThread>) => {
    const m = ev.data
    if ('kind' in m) return onStopped?.()
    const w = waiting.get(m.id)
    waiting.delete(m.id)
    if (!waiting.size) handle.unref()
    if (!w) return
    if ('rows' in m) w.resolve(m.rows)
    else w.reject(Object.assign(new Error(m.error), { code: m.code }))
  }
  worker.onerror = (e) => {
    console.error(`gw: the log read thread failed (${e.message}); log reads run on the serving thread`)
    inProcess = inProcessReader(fallback)
    for (const w of waiting.values()) w.reject(new Error(`the log read thread failed: ${e.message}`))
    waiting.clear()
    handle.unref()
  }
  worker.postMessage({ kind: 'open', path } satisfies ToThread)
  return {
    all<T>(sql: string, args: SQLQueryBindings[]): Promise<T[]> {
      if (inProcess) return inProcess.all<T>(sql, args)
      const id = ++nextId
      return new Promise<T[]>((resolve, reject) => {
        if (!waiting.size) handle.ref()
        waiting.set(id, { resolve: resolve as (rows: unknown[]) => void, reject })
        worker.postMessage({ kind: 'read', id, sql, args } satisfies ToThread)
      })
    },
    async stop() {
      // Reads already sent finish first (messages are handled in order), then the connection closes.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000)
        onStopped = () => {
          clearTimeout(timer)
          resolve()
        }
        worker.postMessage({ kind: 'stop' } satisfies ToThread)
      })
      for (const w of waiting.values()) w.reject(new Error('the store is closed'))
      waiting.clear()
      handle.unref()
      inProcess = inProcessReader(fallback)
      worker.terminate()
      URL.revokeObjectURL(source)
    },
  }
}
