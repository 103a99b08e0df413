// Incremental Server-Sent Events decoder: bytes in, `{event, data}` records out (WHATWG rules).

export interface SseEvent {
  /** The `event:` field, when the upstream names its events (Anthropic). */
  event: string | undefined
  data: string
}

/**
 * Longest line, and longest data of one event, the decoder holds (characters): a provider's largest
 * real event is far below it; past it the upstream is failing, not answering (docs/security.md).
 */
export const MAX_SSE_EVENT_CHARS = 8 * 1024 * 1024
const TOO_LARGE = `an upstream event or line is longer than ${MAX_SSE_EVENT_CHARS} characters`

/**
 * Feed it upstream chunks as they arrive; it returns the events completed so far.
 * Handles LF, CR and CRLF line ends (also split across chunks), `:` comments,
 * multi-line `data:` and the single optional space after the colon. A line or an event longer than
 * MAX_SSE_EVENT_CHARS is not held: `tooLarge` is set, what was held is dropped and the rest of the
 * input is ignored.
 */
export class SseDecoder {
  private readonly text = new TextDecoder()
  private buffer = ''
  private pendingCR = false
  private event: string | undefined = undefined
  private data: string[] = []
  private dataChars = 0
  /** Why the decoder stopped: a line or an event passed MAX_SSE_EVENT_CHARS. */
  tooLarge: string | undefined

  push(bytes: Uint8Array): SseEvent[] {
    if (this.tooLarge) return []
    return this.feed(this.text.decode(bytes, { stream: true }))
  }

  /** Text already decoded (a relayed stream's text read again on the log thread). */
  pushText(text: string): SseEvent[] {
    if (this.tooLarge) return []
    return this.feed(text)
  }

  /** Call at end of input: a final event without its blank line is still delivered. */
  end(): SseEvent[] {
    if (this.tooLarge) return []
    const out = this.feed(this.text.decode())
    if (this.buffer.length) {
      this.line(this.buffer, 0, this.buffer.length, out)
      this.buffer = ''
    }
    this.dispatch(out)
    return out
  }

  private feed(chunk: string): SseEvent[] {
    const out: SseEvent[] = []
    let s = chunk
    // A CR ended the last text: an LF starting this one belongs to it (an empty text changes nothing).
    if (this.pendingCR && s.length) {
      this.pendingCR = false
      if (s.charCodeAt(0) === 10) s = s.slice(1)
    }
    // The carried-over partial line holds no line end, so only the new text is searched from `offset`.
    const offset = this.buffer.length
    const buf = offset ? this.buffer + s : s
    this.buffer = ''
    let start = 0
    if (buf.indexOf('\r', offset) === -1) {
      // LF only, as every provider sends: each line end found by indexOf.
      for (let i = buf.indexOf('\n', offset); i !== -1; i = buf.indexOf('\n', start)) {
        this.line(buf, start, i, out)
        start = i + 1
      }
    } else {
      for (let i = offset; i < buf.length; i++) {
        const c = buf.charCodeAt(i)
        if (c !== 10 && c !== 13) continue
        this.line(buf, start, i, out)
        if (c === 13) {
          if (i + 1 === buf.length) this.pendingCR = true
          else if (buf.charCodeAt(i + 1) === 10) i++
        }
        start = i + 1
      }
    }
    this.buffer = start === 0 ? buf : buf.slice(start)
    if (this.buffer.length > MAX_SSE_EVENT_CHARS) this.tooLarge ??= TOO_LARGE
    if (this.tooLarge) {
      this.buffer = ''
      this.data = []
      return []
    }
    return out
  }

  /** The line `text[from, to)`. */
  private line(text: string, from: number, to: number, out: SseEvent[]): void {
    if (from === to) return this.dispatch(out)
    if (text.startsWith('data:', from)) {
      const data = text.slice(text.charCodeAt(from + 5) === 32 ? from + 6 : from + 5, to)
      this.dataChars += data.length
      if (this.dataChars > MAX_SSE_EVENT_CHARS) this.tooLarge ??= TOO_LARGE
      else this.data.push(data)
      return
    }
    if (text.charCodeAt(from) === 58) return // ':' comment
    const colon = text.indexOf(':', from)
    const hasValue = colon !== -1 && colon < to
    const field = text.slice(from, hasValue ? colon : to)
    if (field === 'event') this.event = hasValue ? text.slice(text.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1, to) : ''
    else if (field === 'data') this.data.push('') // `data` with no colon: an empty line of data
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data.length && !this.tooLarge) out.push({ event: this.event, data: this.data.length === 1 ? (this.data[0] as string) : this.data.join('\n') })
    this.data = []
    this.dataChars = 0
    this.event = undefined
  }
}

const LF = 10
const CR = 13

/**
 * Where the last whole event of `buf` ends (just past its blank line), 0 when none does; -1 when `buf`
 * holds a CR, whose line ends this scan does not follow (the relay then goes on event by event).
 * Every provider frames its events with LF alone.
 */
export function lastEventEnd(buf: Uint8Array): number {
  if (buf.indexOf(CR) !== -1) return -1
  for (let i = buf.length - 1; i > 0; i--) if (buf[i] === LF && buf[i - 1] === LF) return i + 1
  return 0
}
