// The serving thread's side of the log path: hands each request's log material to the log thread (a Bun Worker), keeps it until the thread says it is settled, restarts a thread that dies.

import type { LogEntry } from '../domain/log-entry'
import { withoutBodies } from './log-cursor'
import type { LogSpool } from './log-spool'
import type { SpoolClaim } from './spool-claim'
import type { LogWriterOptions } from './log-writer'
import {
  type BodyMaterial,
  entryOf,
  type FromLogThread,
  type LogItem,
  LogSink,
  type LogThreadStore,
  type LogWriterSettings,
  packItems,
  type SinkStats,
  type ToLogThread,
  unpackItems,
} from './log-sink'
import type { CachePut, KeptAnswers, LogStore } from './types'

export interface LogPathOptions extends LogWriterSettings {
  /** GW_LOG_BODY_MAX_BYTES: larger bodies are stored as a preview. */
  bodyMaxBytes: number
  /**
   * Entries handed over and not yet settled (written, spooled or given up), at most. Past it, `record`
   * returns a promise the request waits on until there is room: the serving thread waits, it never drops.
   */
  maxQueue?: number
  onError?: (err: unknown, attempt: number) => void
  /** In-process writer only (an in-memory database): see LogWriterOptions.quiet. */
  quiet?: () => boolean
  /** The spool folder this instance holds (a database server's: src/store/spool-claim.ts), given up once the thread has ended. */
  spoolClaim?: SpoolClaim
  /**
   * The response cache whose puts the log thread writes with the entries (the store's SQLite cache,
   * ResponseCacheStore.keptByLog): told what is handed over, settled and dropped.
   */
  cache?: KeptAnswers
}

/** What a request hands over besides its entry: the bodies as it holds them, and the answer the response cache keeps. */
export interface LogBodies {
  request?: BodyMaterial
  response?: BodyMaterial
  kept?: CachePut
}

type StartPort = (receive: (m: FromLogThread) => void, died: () => void) => Port

/** A sink on this thread, spoken to as a log thread is. */
function inProcessPort(store: LogStore, opts: LogPathOptions, spool?: () => LogSpool): StartPort {
  return (receive) => {
    const writer: LogWriterOptions = {
      batchSize: opts.batchSize,
      intervalMs: opts.intervalMs,
      // On the serving thread: no catch-up transactions (LogWriterOptions.catchUp).
      catchUp: false,
      ...(opts.quiet ? { quiet: opts.quiet } : {}),
      ...(spool ? { spool: spool() } : {}),
    }
    const sink = new LogSink(store, opts.bodyMaxBytes, writer, receive)
    queueMicrotask(() => receive({ kind: 'started' }))
    return {
      post: (m) => {
        if (m.kind === 'items') sink.add(unpackItems(m.packed))
        else if (m.kind === 'flush') void sink.flush(m.id)
        else if (m.kind === 'close') void sink.close(m.id)
      },
      terminate: () => {},
      kill: () => {},
      hold: () => {},
    }
  }
}

/** Where the log material goes: a Worker, or (an in-memory database, which no other thread can open) a sink on this thread. */
interface Port {
  post(m: ToLogThread): void
  terminate(): void
  /** Ends the thread as a crash would (tests): its close event starts another. */
  kill(): void
  /** Whether the thread keeps the process alive: only while a flush or the close waits on it. */
  hold(on: boolean): void
}

/** An item handed over, with what finds it again. */
interface Pending {
  item: LogItem
  requestId: string
  orgId: string
  /** LogEntry.responseId, when the entry has one. */
  responseId?: string
}

/** Spooled entries kept readable from memory by id, at most (the newest). */
const SPOOLED_READABLE = 2000

/**
 * Items are posted to the log thread at most this long after they are recorded… Each post wakes the
 * thread (tens of µs of its CPU, on the serving thread's core when gw has one); the writer batches for
 * 50 ms anyway, and GET /v1/logs/:id reads a pending entry from here (docs/benchmarks.md, "Log writer").
 */
const SEND_MS = 25
/** …or as soon as this many wait. */
const SEND_ITEMS = 256

const NO_STATS: SinkStats = { written: 0, dropped: 0, retries: 0, spooled: 0, inSpool: 0, failing: false }

/**
 * The log thread's module. In the compiled binary it is a second entry point (scripts/build.ts),
 * named by its path under src/ (this module's URL is then the binary's own); from source, beside this file.
 */
const THREAD_MODULE = /\$bunfs|~BUN/.test(import.meta.url) ? './store/log-thread.ts' : new URL('./log-thread.ts', import.meta.url).href

/**
 * The log path of the serving thread (`deps.logs`). `record` hands over one request's entry without
 * its bodies as JSON text and the bodies as the strings already held; items go to the thread packed
 * into one string (packItems), one post every SEND_MS or SEND_ITEMS. Every item is kept here until the log thread reports it settled, so a
 * thread that dies (detected by its `close` event) is replaced and handed the same items again, in
 * order; the stores skip request ids they already hold, so each entry is stored exactly once.
 */
export class LogPath {
  private seq = 0
  /** Items handed over and not yet settled, in order. */
  private readonly unsettled = new Map<number, Pending>()
  /** The same, by request id (GET /v1/logs/:id reads them before they are written). */
  private readonly byRequest = new Map<string, Pending>()
  /** Pending entries of relayed Responses answers, by the upstream's id (LogEntry.responseId). */
  private readonly byResponse = new Map<string, Pending>()
  /** Items moved to the spool, still readable by id (see keepSpooled). */
  private readonly spooled = new Map<string, Pending>()
  private outbox: LogItem[] = []
  private sendDue = false
  private sink: SinkStats = NO_STATS
  /** The counters of the threads that came before this one. */
  private earlier: SinkStats = NO_STATS
  /** Flushes and the close waiting for the thread, by id (posted again to a restarted thread). */
  private readonly waiting = new Map<number, { kind: 'flush' | 'close'; resolve: () => void }>()
  private nextId = 0
  private room: Array<() => void> = []
  private port: Port | undefined
  private storeReady = false
  private closing: Promise<void> | undefined
  private closed = false
  private restartAt = 0
  private readonly maxQueue: number
  /** Entries given up here (at close, when the thread could not take them). */
  private droppedHere = 0
  /** Log threads started again after one died. */
  restarts = 0
  /** Log threads started, the first included. */
  started = 0

  /** The current log thread has said it opened its store. */
  private opened = false
  /** Log threads in a row that died before they started. */
  private stillborn = 0

  private constructor(
    private start: StartPort,
    private readonly opts: LogPathOptions,
    /** Where entries go, on this thread, when log threads keep dying before they start (see died). */
    private readonly fallback?: StartPort,
  ) {
    this.maxQueue = opts.maxQueue ?? 20_000
    this.open()
  }

  /**
   * A log thread writing to `store` over its own connection. `fallback`: the same store as this
   * thread opened it (and the spool, for a database server), written from here if three log threads
   * in a row die before they open theirs.
   */
  static thread(store: LogThreadStore, opts: LogPathOptions, fallback?: { logs: LogStore; spool?: () => LogSpool }): LogPath {
    const writer: LogWriterSettings = { batchSize: opts.batchSize, intervalMs: opts.intervalMs }
    return new LogPath(
      (receive, died) => {
      const worker = new Worker(THREAD_MODULE)
      let gone = false
      const end = () => {
        if (gone) return
        gone = true
        died()
      }
      worker.addEventListener('message', (ev: MessageEvent<FromLogThread>) => receive(ev.data))
      // An uncaught error ends the thread; `close` follows (ended here too in case it does not).
      worker.addEventListener('error', (ev) => {
        console.error('gw: the log thread failed:', (ev as ErrorEvent).message)
        worker.terminate()
        end()
      })
      worker.addEventListener('close', end)
      const handle = worker as Worker & { ref(): void; unref(): void }
      handle.unref()
      worker.postMessage({ kind: 'start', store, writer, bodyMaxBytes: opts.bodyMaxBytes } satisfies ToLogThread)
      return {
        post: (m) => worker.postMessage(m),
        terminate: () => {
          gone = true
          worker.terminate()
        },
        kill: () => worker.terminate(),
        hold: (on) => (on ? handle.ref() : handle.unref()),
      }
      },
      opts,
      fallback && inProcessPort(fallback.logs, opts, fallback.spool),
    )
  }

  /** The same path on this thread, for a database no other thread can open (`:memory:`). */
  static inProcess(store: LogStore, opts: LogPathOptions): LogPath {
    const path = new LogPath(inProcessPort(store, opts), opts)
    path.storeReady = true
    return path
  }

  /**
   * Stage 7: hands over one request's entry (without bodies) and its bodies as held. A promise when
   * the queue is full: the caller waits on it (the entry is already taken).
   */
  record(entry: LogEntry, bodies: LogBodies = {}): Promise<void> | undefined {
    const item: LogItem = { seq: ++this.seq, head: JSON.stringify(entry) }
    if (bodies.request) item.request = bodies.request
    if (bodies.response) item.response = bodies.response
    if (bodies.kept && this.opts.cache?.handOver(bodies.kept)) item.kept = bodies.kept
    const pending: Pending = { item, requestId: entry.requestId, orgId: entry.orgId }
    this.unsettled.set(item.seq, pending)
    this.byRequest.set(entry.requestId, pending)
    if (entry.responseId) {
      pending.responseId = entry.responseId
      this.byResponse.set(entry.responseId, pending)
    }
    if (this.closed) {
      // After close nothing is written any more: counted, as before, rather than kept for ever.
      this.settle([item.seq])
      this.droppedHere++
      return undefined
    }
    this.outbox.push(item)
    // Posted in batches: every SEND_MS, or at once past SEND_ITEMS (each post wakes the log thread).
    if (this.outbox.length >= SEND_ITEMS) this.send()
    else if (!this.sendDue) {
      this.sendDue = true
      setTimeout(this.send, SEND_MS)
    }
    if (this.unsettled.size < this.maxQueue) return undefined
    return new Promise<void>((resolve) => this.room.push(resolve))
  }

  /** A whole entry, bodies included as values (for callers that hold no JSON text of them). */
  write(entry: LogEntry): Promise<void> | undefined {
    const bodies: LogBodies = {}
    if (entry.requestBody !== undefined) bodies.request = { value: entry.requestBody }
    if (entry.responseBody !== undefined) bodies.response = { value: entry.responseBody }
    return this.record(withoutBodies(entry) as LogEntry, bodies)
  }

  /** An entry handed over and not yet written, or waiting in the spool (read-your-writes for GET /v1/logs/:id). */
  pendingEntry(orgId: string, requestId: string): LogEntry | undefined {
    const p = this.byRequest.get(requestId) ?? (this.spooled.size ? this.spooled.get(requestId) : undefined)
    return p && p.orgId === orgId ? entryOf(p.item, this.opts.bodyMaxBytes) : undefined
  }

  /** The pending entry of a relayed Responses answer, by the upstream's id (previous_response_id on another provider). */
  pendingByResponse(orgId: string, responseId: string): LogEntry | undefined {
    const p = this.byResponse.get(responseId)
    return p && p.orgId === orgId ? entryOf(p.item, this.opts.bodyMaxBytes) : undefined
  }

  /** The database was reached and migrated: the thread may write (until then its batches are spooled). */
  markReady(): void {
    this.storeReady = true
    this.port?.post({ kind: 'ready' })
  }

  /** Whether the log thread writes the response cache's puts (`LogBodies.kept`): else the cache writes its own. */
  get keepsAnswers(): boolean {
    return this.opts.cache !== undefined
  }

  /** Entries handed over and not yet written or spooled. */
  get queued(): number {
    return this.unsettled.size
  }

  get failing(): boolean {
    return this.sink.failing
  }

  get inSpool(): number {
    return this.sink.inSpool
  }

  /** Counters for /health and /metrics (the thread's, with what this side gave up). */
  get stats(): { written: number; dropped: number; retries: number; spooled: number; restarts: number } {
    const s = this.sink
    const e = this.earlier
    return {
      written: e.written + s.written,
      dropped: e.dropped + s.dropped + this.droppedHere,
      retries: e.retries + s.retries,
      spooled: e.spooled + s.spooled,
      restarts: this.restarts,
    }
  }

  /** Writes everything handed over so far (one pass: a failing database leaves entries queued). */
  flush(): Promise<void> {
    if (this.closed) return Promise.resolve()
    return this.ask('flush')
  }

  /** Writes everything handed over (retrying a few times, then the spool), then ends the thread. */
  close(): Promise<void> {
    this.closing ??= this.shut()
    return this.closing
  }

  private async shut(): Promise<void> {
    try {
      await this.ask('close')
    } finally {
      this.closed = true
      this.spooled.clear()
      this.port?.terminate()
      this.port = undefined
      this.opts.spoolClaim?.release()
    }
    // What the thread could not write nor spool is given up, as the writer always did at close.
    if (this.unsettled.size) {
      this.droppedHere += this.unsettled.size
      this.settle([...this.unsettled.keys()])
    }
  }

  /** Ends the log thread as a crash would (tests kill it mid-batch). */
  killThread(): void {
    this.port?.kill()
  }

  private ask(kind: 'flush' | 'close'): Promise<void> {
    this.send()
    const id = ++this.nextId
    return new Promise<void>((resolve) => {
      this.waiting.set(id, { kind, resolve })
      this.port?.hold(true)
      this.port?.post({ kind, id })
    })
  }

  private readonly send = (): void => {
    this.sendDue = false
    if (!this.outbox.length || !this.port) return
    const items = this.outbox
    this.outbox = []
    this.port.post({ kind: 'items', packed: packItems(items) })
  }

  private open(): void {
    this.opened = false
    const port = this.start(
      (m) => this.receive(m),
      () => this.died(port),
    )
    this.port = port
    this.started++
    if (this.storeReady) port.post({ kind: 'ready' })
    // A new thread is handed everything not yet settled, in order, then what waits on it.
    const items = [...this.unsettled.values()].map((p) => p.item)
    this.outbox = []
    if (items.length) port.post({ kind: 'items', packed: packItems(items) })
    for (const [id, w] of this.waiting) port.post({ kind: w.kind, id })
    port.hold(this.waiting.size > 0)
  }

  private died(port: Port): void {
    if (this.port !== port || this.closed) return
    this.port = undefined
    this.restarts++
    this.stillborn = this.opened ? 0 : this.stillborn + 1
    if (this.stillborn >= 3 && this.fallback && this.start !== this.fallback) {
      console.error('gw: the log thread cannot start (three in a row ended before opening the database); log entries are written on the serving thread instead')
      this.start = this.fallback
    }
    const e = this.earlier
    const s = this.sink
    this.earlier = { written: e.written + s.written, dropped: e.dropped + s.dropped, retries: e.retries + s.retries, spooled: e.spooled + s.spooled, inSpool: 0, failing: false }
    this.sink = { ...NO_STATS, inSpool: s.inSpool, failing: s.failing }
    // A thread that dies at once again (say, a database it cannot open) is started again after a pause.
    const wait = Math.max(0, this.restartAt - performance.now())
    this.restartAt = performance.now() + Math.min(5000, 100 * 2 ** Math.min(this.restarts, 6))
    setTimeout(() => {
      if (!this.closed && !this.port) this.open()
    }, wait)
  }

  private receive(m: FromLogThread): void {
    if (m.kind === 'started') {
      this.opened = true
      this.stillborn = 0
      return
    }
    this.sink = m.stats
    if (m.kind === 'error') {
      this.opts.onError?.(new Error(m.message), m.attempt)
      return
    }
    this.keepSpooled(m.spooled)
    // Before the settled puts: a key dropped and put again since is still handed over, and stays known.
    if (m.forgotten.length) this.opts.cache?.forget(m.forgotten)
    this.settle(m.seqs)
    if (m.kind === 'done') {
      const w = this.waiting.get(m.id)
      this.waiting.delete(m.id)
      if (!this.waiting.size) this.port?.hold(false)
      w?.resolve()
    }
  }

  /**
   * Items the log thread moved to the spool (the database unreachable) stay readable by id from
   * memory, the newest SPOOLED_READABLE of them: the database cannot answer for them meanwhile.
   */
  private keepSpooled(seqs: readonly number[]): void {
    for (const seq of seqs) {
      const p = this.unsettled.get(seq)
      if (!p) continue
      this.spooled.set(p.requestId, p)
      if (this.spooled.size > SPOOLED_READABLE) this.spooled.delete(this.spooled.keys().next().value as string)
    }
  }

  private settle(seqs: readonly number[]): void {
    for (const seq of seqs) {
      const p = this.unsettled.get(seq)
      if (!p) continue
      this.unsettled.delete(seq)
      if (this.byRequest.get(p.requestId) === p) this.byRequest.delete(p.requestId)
      if (p.responseId && this.byResponse.get(p.responseId) === p) this.byResponse.delete(p.responseId)
      if (p.item.kept) this.opts.cache?.settled(p.item.kept)
    }
    // Every waiting request's entry is already counted: once below the bound, they all go on.
    if (this.room.length && (this.unsettled.size < this.maxQueue || this.closed)) for (const go of this.room.splice(0)) go()
  }
}
