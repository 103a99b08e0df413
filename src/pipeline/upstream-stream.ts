// Reads an upstream SSE body as translated StreamParts, one pull at a time, with a silence limit.

import type { StreamPart, StreamTranslator } from '../providers/adapter'
import { SseDecoder } from '../sse/parse'

const TIMEOUT = Symbol('timeout')
type ReadResult = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>

export class UpstreamStream {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new SseDecoder()
  private finished = false

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly translator: StreamTranslator,
    /** Aborts the upstream request (and so its body). */
    private readonly abort: () => void,
    /** Longest silence allowed between upstream chunks. */
    private readonly idleMs: number,
  ) {
    this.reader = body.getReader()
  }

  /**
   * The next translated parts, or null once the upstream body is over. With `deadline` (a
   * performance.now() time), waiting past it is a timeout too, however lively the upstream is.
   */
  async next(deadline?: number): Promise<StreamPart[] | null> {
    while (!this.finished) {
      let chunk: ReadResult | typeof TIMEOUT
      const wait = deadline === undefined ? this.idleMs : Math.min(this.idleMs, deadline - performance.now())
      try {
        chunk = wait > 0 ? await this.read(wait) : TIMEOUT
      } catch (err) {
        this.finished = true
        this.abort()
        const why = err instanceof Error ? err.message : String(err)
        return [{ type: 'failure', failure: { kind: 'provider_error', message: `upstream connection lost mid-stream (${why})` } }]
      }
      if (chunk === TIMEOUT) {
        this.finished = true
        this.abort()
        const message =
          wait < this.idleMs ? 'no content before the deadline' : `upstream stream stalled: no data for ${this.idleMs} ms`
        return [{ type: 'failure', failure: { kind: 'timeout', message } }]
      }
      if (chunk.done) {
        this.finished = true
        return [...this.decoder.end().flatMap((e) => this.translator.push(e)), ...this.translator.end()]
      }
      const events = this.decoder.push(chunk.value)
      if (!events.length) continue
      const parts = events.flatMap((e) => this.translator.push(e))
      if (parts.length) return parts
    }
    return null
  }

  /** Stops reading and aborts the upstream request. */
  cancel(): void {
    if (this.finished) return
    this.finished = true
    this.abort()
    this.reader.cancel().catch(() => {})
  }

  private read(ms: number): Promise<ReadResult | typeof TIMEOUT> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<typeof TIMEOUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMEOUT), ms)
    })
    return Promise.race([this.reader.read(), timeout]).finally(() => clearTimeout(timer))
  }
}
