// The log thread's side of the log path: what the serving thread hands over per request, the entry built from it, and the writer that batches it into the store.

import { type RelayedEvents, type RelayReader, relayTranscript, streamedAnswer } from '../apis/relay-transcript'
import type { LogEntry } from '../domain/log-entry'
import { withEntryText, withJsonText } from './json-text'
import { LogWriter, type LogWriterOptions } from './log-writer'
import type { Usage } from '../providers/openai-types'
import type { CachePut, LogStore } from './types'

/**
 * A body as the serving thread holds it: its JSON text as read or sent (and its size when known); a
 * streamed answer as its assembled parts (its text unserialised); else the value.
 */
export interface BodyMaterial {
  text?: string
  /** Bytes of the whole body; `text` may hold only the prefix a preview keeps. */
  bytes?: number
  stream?: StreamedAnswer
  /** A relayed stream's text as the client received it: its transcript is read here (relayTranscript). */
  events?: RelayedEvents
  value?: unknown
}

/** What the log keeps of a streamed answer (PRODUCT §11: the assembled text, tool calls and finish reason). */
export interface StreamedAnswer {
  content: string
  tool_calls?: unknown[]
  finish_reason: string | null
}

/**
 * One request's log material, posted to the log thread: the entry without its bodies as JSON text
 * (small: ids, figures, attempts, tags) and the bodies as the serving thread already held them, never
 * serialised again there; and the answer the response cache keeps, when the log thread writes the
 * cache (SQLite), written in the entry's transaction. `seq` orders the items and names them in
 * acknowledgements.
 */
export interface LogItem {
  seq: number
  head: string
  request?: BodyMaterial
  response?: BodyMaterial
  kept?: CachePut
}

const keptAnswers = new WeakMap<LogEntry, CachePut>()

/** The response cache's put that came with an entry (written with it: src/store/sqlite/logs.ts). */
export function keptAnswerOf(entry: LogEntry): CachePut | undefined {
  return keptAnswers.get(entry)
}

/** Serving thread → log thread. */
export type ToLogThread =
  | { kind: 'start'; store: LogThreadStore; writer: LogWriterSettings; bodyMaxBytes: number }
  /** Items packed into one string (packItems): one copy per batch instead of a structured clone per object. */
  | { kind: 'items'; packed: string }
  | { kind: 'ready' }
  | { kind: 'flush'; id: number }
  | { kind: 'close'; id: number }

/**
 * Log thread → serving thread: `seqs` lists the items written, spooled or given up since the last
 * message; `spooled`, those of them that wait in the spool (still readable from memory by id);
 * `forgotten`, the response cache keys (`org\nkey`) the batches written dropped (KeptAnswers.forget).
 */
export type FromLogThread =
  | { kind: 'settled'; seqs: number[]; spooled: number[]; forgotten: string[]; stats: SinkStats }
  | { kind: 'done'; id: number; seqs: number[]; spooled: number[]; forgotten: string[]; stats: SinkStats }
  | { kind: 'error'; message: string; attempt: number; stats: SinkStats }
  /** The thread opened its store and takes items. */
  | { kind: 'started' }

/** Where the log thread writes: its own connection to the same database. */
export type LogThreadStore = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; spoolDir: string }

/** The writer's settings that cross to the log thread (numbers only). */
export interface LogWriterSettings {
  batchSize?: number
  intervalMs?: number
}

export interface SinkStats {
  written: number
  dropped: number
  retries: number
  spooled: number
  inSpool: number
  failing: boolean
}

/**
 * A body over `max` bytes is stored as `{truncated, bytes, preview}` (PRODUCT §11); one within it
 * keeps the JSON text it came as, so the store does not serialise it again.
 */
export function cappedBody(b: BodyMaterial, max: number, parse = true): unknown {
  if (b.stream) return b.stream
  if (b.events) return streamedAnswer(relayTranscript(b.events))
  const text = b.text
  const size = b.bytes ?? (text === undefined ? undefined : Buffer.byteLength(text))
  if (size === undefined || size <= max) return text === undefined ? b.value : withJsonText(parse ? JSON.parse(text) : new JsonBody(text), text)
  // At most `max` bytes, cut on a character boundary.
  const buf = Buffer.from((text ?? JSON.stringify(b.value)).slice(0, max))
  let end = Math.min(max, buf.length)
  while (end > 0 && end < buf.length && ((buf[end] as number) & 0xc0) === 0x80) end--
  const preview = buf.subarray(0, end).toString('utf8')
  return { truncated: true, bytes: size, preview }
}

/**
 * A body kept as the JSON text it came as, for the store to write as it is (the log thread never
 * parses it); parsed only if the entry itself is serialised (the spool).
 */
class JsonBody {
  constructor(private readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text)
  }
}

/** The whole entry of an item, bodies capped; `parse` false: bodies with text stay text (JsonBody). */
export function entryOf(item: LogItem, bodyMaxBytes: number, parse = true): LogEntry {
  const entry = withEntryText(JSON.parse(item.head) as LogEntry, item.head)
  if (item.request) entry.requestBody = cappedBody(item.request, bodyMaxBytes, parse)
  if (item.response) entry.responseBody = cappedBody(item.response, bodyMaxBytes, parse)
  return entry
}

/**
 * Builds entries from items and writes them with a LogWriter; every entry written, spooled or given
 * up is reported by its seq through `settled` (the serving thread keeps each item until then, so a
 * log thread that dies loses nothing: the next one is handed the same items again, and the stores
 * skip request ids they already hold).
 */
export class LogSink {
  private readonly seqOf = new WeakMap<LogEntry, number>()
  private settledSeqs: number[] = []
  private spooledSeqs: number[] = []
  private reportDue = false
  /** The counters changed with nothing settled (the spool drained): reported all the same. */
  private statsChanged = false
  readonly writer: LogWriter

  constructor(
    private readonly store: LogStore,
    private readonly bodyMaxBytes: number,
    options: LogWriterOptions,
    private readonly report: (m: FromLogThread) => void,
  ) {
    this.writer = new LogWriter(store, {
      ...options,
      onSettled: (entries, how) => {
        for (const e of entries) {
          const seq = this.seqOf.get(e)
          if (seq === undefined) continue
          this.settledSeqs.push(seq)
          if (how === 'spooled') this.spooledSeqs.push(seq)
        }
        this.reportSoon()
      },
      onDrained: () => {
        this.statsChanged = true
        this.reportSoon()
      },
      onError: (err, attempt) => {
        options.onError?.(err, attempt)
        this.report({ kind: 'error', message: err instanceof Error ? err.message : String(err), attempt, stats: this.stats() })
      },
    })
  }

  add(items: readonly LogItem[]): void {
    for (const item of items) {
      let entry: LogEntry
      try {
        entry = entryOf(item, this.bodyMaxBytes, false)
      } catch {
        // A head that does not parse cannot be written; it is given up rather than retried for ever.
        this.settledSeqs.push(item.seq)
        this.reportSoon()
        continue
      }
      this.seqOf.set(entry, item.seq)
      if (item.kept) keptAnswers.set(entry, item.kept)
      this.writer.write(entry)
    }
  }

  /** Writes what is queued (see LogWriter.flush), then reports it done with what settled meanwhile. */
  async flush(id: number): Promise<void> {
    await this.writer.flush()
    this.report({ kind: 'done', id, ...this.takeSettled(), stats: this.stats() })
  }

  /** Writes everything (see LogWriter.close), lets the store go, then reports it done. */
  async close(id: number, closeStore?: () => Promise<void>): Promise<void> {
    await this.writer.close()
    await closeStore?.()
    this.report({ kind: 'done', id, ...this.takeSettled(), stats: this.stats() })
  }

  stats(): SinkStats {
    const w = this.writer
    return { ...w.stats, inSpool: w.inSpool, failing: w.failing }
  }

  /** One report per turn of the thread's loop, however many batches settled in it. */
  private reportSoon(): void {
    if (this.reportDue) return
    this.reportDue = true
    setTimeout(() => {
      this.reportDue = false
      const settled = this.takeSettled()
      if (settled.seqs.length || settled.forgotten.length || this.statsChanged) this.report({ kind: 'settled', ...settled, stats: this.stats() })
      this.statsChanged = false
    }, 0)
  }

  private takeSettled(): { seqs: number[]; spooled: number[]; forgotten: string[] } {
    const taken = { seqs: this.settledSeqs, spooled: this.spooledSeqs, forgotten: this.store.takeDroppedCacheKeys?.() ?? [] }
    this.settledSeqs = []
    this.spooledSeqs = []
    return taken
  }
}

/**
 * Items as one string: each field length-prefixed (`<length>:<text>`), so bodies cross to the log
 * thread as the text they are, never serialised again. A body is `-` (none), `t<bytes>` or `t` and
 * its text, `s`, the answer's text, finish reason and tool calls (JSON, `` when none), `e`, a relayed
 * stream's reader and text, or `v` and its
 * value as JSON (a value without text: a count, an MCP result). The kept answer, last, is `-` (none),
 * or `k` (`kr`: its key may be stored already) or `s` (`sr`) and its org, key, expiry, time and the org's
 * bound, then for `k` its value, for `s` (a relayed stream's, made on the log thread) the stream's reader
 * and text (`=`: the response body's), the model, usage (JSON), cost (`` when unknown) and largest entry.
 */
export function packItems(items: readonly LogItem[]): string {
  let out = ''
  for (const it of items) out += `${field(String(it.seq))}${field(it.head)}${packBody(it.request)}${packBody(it.response)}${packKept(it.kept, it.response?.events)}`
  return out
}

/** `logged`: the item's response body as a relayed stream's text; a kept stream of the same text does not carry it again. */
function packKept(k: CachePut | undefined, logged: RelayedEvents | undefined): string {
  if (!k) return field('-')
  const at = field(k.orgId) + field(k.key) + field(String(k.expiresAt)) + field(String(k.now)) + field(String(k.maxOrgBytes))
  if ('value' in k) return keptValueField(k, at, k.value)
  // A stream's answer made already (for a repeat) goes as its value.
  if (k.made) return keptValueField(k, at, k.made)
  const s = k.stream
  const events = s.events === logged ? field('=') : field(s.events.reader) + field(s.events.text)
  return (
    field(k.replaces === false ? 's' : 'sr') + at + events + field(s.model) + field(JSON.stringify(s.usage)) + field(s.costUsd === null ? '' : String(s.costUsd)) +
    field(String(s.maxEntryBytes))
  )
}

const field = (s: string) => `${s.length}:${s}`

/** A kept answer packed as its value (`k`, or `kr` when its key may be stored already); `at`: its packed arguments. */
const keptValueField = (k: CachePut, at: string, value: string) => field(k.replaces === false ? 'k' : 'kr') + at + field(value)

function packBody(b: BodyMaterial | undefined): string {
  if (!b) return field('-')
  if (b.text !== undefined) return field(b.bytes === undefined ? 't' : `t${b.bytes}`) + field(b.text)
  if (b.stream) {
    const a = b.stream
    return field('s') + field(a.content) + field(a.finish_reason ?? '') + field(a.tool_calls ? JSON.stringify(a.tool_calls) : '')
  }
  if (b.events) return field('e') + field(b.events.reader) + field(b.events.text)
  return field('v') + field(JSON.stringify(b.value) ?? 'null')
}

export function unpackItems(packed: string): LogItem[] {
  let at = 0
  const next = (): string => {
    const colon = packed.indexOf(':', at)
    const len = Number(packed.slice(at, colon))
    at = colon + 1 + len
    return packed.slice(colon + 1, at)
  }
  const body = (): BodyMaterial | undefined => {
    const kind = next()
    if (kind === '-') return undefined
    if (kind[0] === 't') return kind.length > 1 ? { text: next(), bytes: Number(kind.slice(1)) } : { text: next() }
    if (kind === 'e') {
      const reader = next() as RelayReader
      return { events: { reader, text: next() } }
    }
    if (kind === 's') {
      const content = next()
      const finish = next()
      const tools = next()
      const stream: StreamedAnswer = { content, finish_reason: finish || null }
      if (tools) stream.tool_calls = JSON.parse(tools) as unknown[]
      // The key order of the answer gw always logged: content, tool_calls, finish_reason.
      return { stream: tools ? { content, tool_calls: stream.tool_calls, finish_reason: stream.finish_reason } : stream }
    }
    return { value: JSON.parse(next()) }
  }
  const items: LogItem[] = []
  while (at < packed.length) {
    const item: LogItem = { seq: Number(next()), head: next() }
    const request = body()
    const response = body()
    if (request) item.request = request
    if (response) item.response = response
    const kept = next()
    if (kept !== '-') {
      const put = { orgId: next(), key: next(), expiresAt: Number(next()), now: Number(next()), maxOrgBytes: Number(next()), replaces: kept.length > 1 }
      if (kept[0] === 'k') item.kept = { ...put, value: next() }
      else {
        const reader = next()
        // `=` is packed only beside a response body of relayed events.
        const events = reader === '=' ? (response?.events as RelayedEvents) : { reader: reader as RelayReader, text: next() }
        const model = next()
        const usage = JSON.parse(next()) as Usage
        const cost = next()
        item.kept = { ...put, stream: { events, model, usage, costUsd: cost === '' ? null : Number(cost), maxEntryBytes: Number(next()) } }
      }
    }
    items.push(item)
  }
  return items
}
