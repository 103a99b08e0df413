// Pass-through helpers: the client's body with only `model` swapped, and a stream translator that
// relays the upstream's bytes as received (cut at event boundaries by the attempt, `lastEventEnd` in
// src/sse/parse.ts) while the provider's own translator still reads each event for usage, the
// first-byte commit and the log.

import { isContent, type StreamPart, type StreamTranslator } from '../providers/adapter'
import type { SseEvent } from '../sse/parse'
import type { RelayReader } from './relay-transcript'

/** The SSE text of one event, as the upstream framed it (`event:` line when named, one `data:` line per line). */
export function encodeEvent(ev: SseEvent): string {
  const data = ev.data.includes('\n') ? ev.data.replaceAll('\n', '\ndata: ') : ev.data
  return ev.event === undefined ? `data: ${data}\n\n` : `event: ${ev.event}\ndata: ${data}\n\n`
}

/**
 * Relays a pass-through stream. Its events reach the log as the text the client received (the log
 * thread reads them again with `reader`, src/apis/relay-transcript.ts); on the serving thread the
 * provider's translator reads every event until the answer's first content (the commit point), and
 * after it only the named events in `actsOn` (usage, the finish, errors, a refusal, a new tool call)
 * and unnamed ones, and any event whose data does not end in `}` (cut short or malformed): the
 * others (text and argument deltas, most of a stream) are not parsed there.
 */
export class RawRelay implements StreamTranslator {
  /** See StreamTranslator.relaysBytes: off, each event is relayed as its SSE text instead. */
  relaysBytes = true
  private content = false

  constructor(
    private readonly inner: StreamTranslator,
    readonly reader: RelayReader,
    private readonly actsOn: ReadonlySet<string>,
  ) {}

  push(ev: SseEvent): StreamPart[] {
    const relay: StreamPart = { type: 'relay', event: ev.event, text: this.relaysBytes ? '' : encodeEvent(ev) }
    // An event whose data does not end its JSON object (cut short, malformed) is read: its failure is acted on.
    if (this.content && ev.event !== undefined && !this.actsOn.has(ev.event) && ev.data.charCodeAt(ev.data.length - 1) === 125) return [relay]
    const parts = this.inner.push(ev)
    if (!this.content) this.content = parts.some(isContent)
    parts.unshift(relay)
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
