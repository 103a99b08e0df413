// Log entries waiting on disk while the database is unreachable (GW_SPOOL_DIR): appended in order, replayed in order, kept across restarts.

import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { LogEntry } from '../domain/log-entry'
import { makePrivateFolder } from './private-folder'

/** A segment file grows to about this size, then the next one starts. */
const SEGMENT_BYTES = 8 * 1024 * 1024

/**
 * Segment files `<16-digit sequence>.jsonl`, one entry per line. Appends are fsynced before the
 * entries leave memory. Replay reads the oldest segment, hands its entries over in order and deletes
 * it once they are stored; stores skip request ids they already hold, so a replay cut short by a
 * crash repeats a few entries harmlessly and never duplicates one.
 */
export class LogSpool {
  private current: { name: string; bytes: number } | undefined
  private nextSeq: number
  /** Entries in the spool now (counted from the files at start). */
  size = 0

  constructor(private readonly dir: string) {
    const names = segmentsIn(dir)
    this.nextSeq = sequenceAfter(names)
    for (const n of names) this.size += readEntries(join(dir, n)).length
  }

  get empty(): boolean {
    return this.size === 0
  }

  /** Appends entries after everything already spooled; returns once they are on disk. */
  append(entries: readonly LogEntry[]): void {
    if (!entries.length) return
    // Entries hold prompts and answers: the folder is its owner's only, like the database's.
    makePrivateFolder(this.dir)
    const text = `${entries.map((e) => JSON.stringify(e)).join('\n')}\n`
    if (!this.current || this.current.bytes > SEGMENT_BYTES || !existsSync(join(this.dir, this.current.name)))
      this.current = { name: segmentName(this.nextSeq++), bytes: 0 }
    const fd = openSync(join(this.dir, this.current.name), 'a', 0o600)
    try {
      writeSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    this.current.bytes += Buffer.byteLength(text)
    this.size += entries.length
  }

  /**
   * Hands every spooled entry, oldest first, in batches to `store`; a segment is deleted once all
   * its batches are stored. Stops at the first failure (what is left stays for the next replay).
   * `between` runs after each batch (the writer appends what arrived meanwhile, replayed in turn).
   */
  async replay(store: (batch: LogEntry[]) => Promise<void>, batchSize: number, between?: () => void): Promise<number> {
    let stored = 0
    // Until none is left: `between` may append (what arrived meanwhile), to a segment after those being read.
    for (let names = this.rotated(); names.length; names = this.rotated()) {
      for (const name of names) {
        const path = join(this.dir, name)
        const entries = readEntries(path)
        for (let i = 0; i < entries.length; i += batchSize) {
          await store(entries.slice(i, i + batchSize))
          between?.()
        }
        rmSync(path, { force: true })
        stored += entries.length
        this.size = Math.max(0, this.size - entries.length)
      }
    }
    return stored
  }

  /** The segments there now; appends from here on go to a new one (never to a segment being read and deleted). */
  private rotated(): string[] {
    this.current = undefined
    return segmentsIn(this.dir)
  }
}

/** The segment files of a spool folder, oldest first (also for src/store/spool-claim.ts, which moves them). */
export function segmentsIn(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return []
  return readdirSync(dir)
    .filter((n) => /^\d{16}\.jsonl$/.test(n))
    .sort()
}

/** The file name of segment `seq`. */
export const segmentName = (seq: number) => `${String(seq).padStart(16, '0')}.jsonl`

/** The sequence of the next segment after `names` (sorted). */
export function sequenceAfter(names: readonly string[]): number {
  const last = names[names.length - 1]
  return last ? Number(last.slice(0, 16)) + 1 : 1
}

/** The entries of a segment; a line cut short by a crash while appending is skipped. */
function readEntries(path: string): LogEntry[] {
  const out: LogEntry[] = []
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line) continue
    try {
      out.push(JSON.parse(line) as LogEntry)
    } catch {
      // The torn tail of an append that never completed: it was never acknowledged either.
    }
  }
  return out
}
