// The log thread (a Bun Worker): builds request log entries from what the serving thread hands over and writes them in batches on its own database connection, with the response cache's puts that come with them (SQLite).

import { connect } from './postgres/open'
import { PgLogStore } from './postgres/logs'
import { cacheForLogWrites, openDatabase } from './sqlite/open'
import { SqliteLogStore } from './sqlite/logs'
import { SqliteCacheWrites } from './sqlite/response-cache'
import { LogSink, type FromLogThread, type LogThreadStore, type ToLogThread, unpackItems } from './log-sink'
import { LogSpool } from './log-spool'
import type { LogStore } from './types'

/** WAL pages after which this connection checkpoints itself (the checkpointer thread does it first; see src/store/sqlite/checkpointer.ts). */
const BACKSTOP_PAGES = 10_000

/** How long a batch waits for another connection's write lock before it fails and is retried. */
const LOCK_WAIT_MS = 200

const scope = globalThis as unknown as Worker
const send = (m: FromLogThread) => scope.postMessage(m)
let sink: LogSink | undefined
let ready = false
let close: (() => Promise<void>) | undefined

function openStore(where: LogThreadStore): { logs: LogStore; close: () => Promise<void>; spool?: LogSpool } {
  if (where.kind === 'sqlite') {
    // Waits a little for a lock (another connection's short write: the last-used times of service
    // keys, retention): this thread answers no request. A longer lock fails the batch; the writer retries it.
    const db = openDatabase(where.path, LOCK_WAIT_MS)
    db.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`)
    cacheForLogWrites(db)
    ready = true
    // The response cache's puts come with the entries and are written in their transaction.
    return { logs: new SqliteLogStore(db, db, undefined, new SqliteCacheWrites(db)), close: async () => db.close() }
  }
  // Two batches in flight and a fold of the roll-ups now and then.
  const sql = connect(where.url, 3)
  return { logs: new PgLogStore(sql, () => ready), close: () => sql.close({ timeout: 5 }), spool: new LogSpool(where.spoolDir) }
}

/** A failure the thread cannot go on from: it ends, and the serving thread starts another (handing it every item not yet settled). */
function fatal(err: unknown): never {
  console.error('gw: the log thread failed:', err instanceof Error ? err.stack : err)
  process.exit(1)
}

// Set at once, so no message arrives before there is a handler. Items are taken as they arrive, in
// order; a flush or close works on what arrived before it while later items keep being queued.
scope.onmessage = (ev: MessageEvent<ToLogThread>) => {
  const m = ev.data
  try {
    switch (m.kind) {
      case 'start': {
        const store = openStore(m.store)
        close = store.close
        sink = new LogSink(store.logs, m.bodyMaxBytes, { ...m.writer, ...(store.spool ? { spool: store.spool } : {}) }, send)
        send({ kind: 'started' })
        return
      }
      case 'ready':
        ready = true
        return
      case 'items':
        sink?.add(unpackItems(m.packed))
        return
      case 'flush':
        sink?.flush(m.id).catch(fatal)
        return
      case 'close':
        sink?.close(m.id, close).catch(fatal)
        return
    }
  } catch (err) {
    fatal(err)
  }
}
