// Pass-through helpers: the client's body with only `model` swapped, and a stream translator that
// relays the upstream's bytes as received (cut at event boundaries by the attempt, `lastEventEnd` in
// src/sse/parse.ts) while the provider's own translator still reads each event for usage, the
// first-byte commit and the log.

import type { StreamPart, StreamTranslator } from '../providers/adapter'
import type { SseEvent } from '../sse/parse'

/** The SSE text of one event, as the upstream framed it (`event:` line when named, one `data:` line per line). */
export function encodeEvent(ev: SseEvent): string {
  const data = ev.data.includes('\n') ? ev.data.replaceAll('\n', '\ndata: ') : ev.data
  return ev.event === undefined ? `data: ${data}\n\n` : `event: ${ev.event}\ndata: ${data}\n\n`
}

export class RawRelay implements StreamTranslator {
  /** See StreamTranslator.relaysBytes: off, each event is relayed as its SSE text instead. */
  relaysBytes = true

  constructor(private readonly inner: StreamTranslator) {}

  push(ev: SseEvent): StreamPart[] {
    const parts = this.inner.push(ev)
    parts.unshift({ type: 'relay', event: ev.event, text: this.relaysBytes ? '' : encodeEvent(ev) })
    return parts
  }

  end(): StreamPart[] {
    return this.inner.end()
  }
}

/** The body with `model` swapped; keeps the client's key order (so an SDK's compact JSON stays byte-equal). */
export function withModel(body: Record<string, unknown>, model: string): string {
  return JSON.stringify({ ...body, model })
}
