// Incremental Server-Sent Events decoder: bytes in, `{event, data}` records out (WHATWG rules).

export interface SseEvent {
  /** The `event:` field, when the upstream names its events (Anthropic). */
  event: string | undefined
  data: string
}

/**
 * Feed it upstream chunks as they arrive; it returns the events completed so far.
 * Handles LF, CR and CRLF line ends (also split across chunks), `:` comments,
 * multi-line `data:` and the single optional space after the colon.
 */
export class SseDecoder {
  private readonly text = new TextDecoder()
  private buffer = ''
  private pendingCR = false
  private event: string | undefined = undefined
  private data: string[] = []

  push(bytes: Uint8Array): SseEvent[] {
    return this.feed(this.text.decode(bytes, { stream: true }))
  }

  /** Call at end of input: a final event without its blank line is still delivered. */
  end(): SseEvent[] {
    const out = this.feed(this.text.decode())
    if (this.buffer.length) {
      this.line(this.buffer, out)
      this.buffer = ''
    }
    this.dispatch(out)
    return out
  }

  private feed(chunk: string): SseEvent[] {
    const out: SseEvent[] = []
    let s = chunk
    if (this.pendingCR) {
      this.pendingCR = false
      if (s.startsWith('\n')) s = s.slice(1)
    }
    let start = 0
    const buf = this.buffer + s
    const offset = this.buffer.length
    this.buffer = ''
    for (let i = offset; i < buf.length; i++) {
      const c = buf.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      this.line(buf.slice(start, i), out)
      if (c === 13) {
        if (i + 1 === buf.length) this.pendingCR = true
        else if (buf.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    this.buffer = buf.slice(start)
    return out
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') return this.dispatch(out)
    if (line.charCodeAt(0) === 58) return // ':' comment
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === 'data') this.data.push(value)
    else if (field === 'event') this.event = value
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data.length) out.push({ event: this.event, data: this.data.join('\n') })
    this.data = []
    this.event = undefined
  }
}
