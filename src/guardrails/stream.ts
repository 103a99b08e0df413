// A streamed answer through the request's guardrails (PRODUCT §19): each text of each choice (content,
// refusal, thinking, each tool call's arguments) is held back just enough for the output guardrails to
// see a whole value and for a placeholder split across chunks to be put back whole; the held text goes
// out with the choice's finish, or before the stream's end. Works on parsed parts only.

import type { StreamPart } from '../providers/adapter'
import type { ChunkChoice, ChunkDelta, ToolCallDelta } from '../providers/openai-types'
import { MAX_ENTITY_CHARS, openKeyBlock } from './entities'
import type { Guard } from './guard'

type TextField = 'content' | 'refusal' | 'reasoning_content'
const FIELDS: readonly TextField[] = ['content', 'refusal', 'reasoning_content']

/** One text being streamed: what the output guardrails have not read yet, and what waits for a placeholder's end. */
interface Held {
  unscanned: string
  unrestored: string
}

export class GuardedStream {
  /** Held text by choice index, then by field (`content`, …, or `tool:<index>`). */
  private readonly held = new Map<number, Map<string, Held>>()
  private readonly scans: boolean

  constructor(private readonly guard: Guard) {
    this.scans = guard.scansAnswer
  }

  /** The parts of one upstream read as the client gets them; null (the upstream is over) once nothing is held. Throws a block. */
  readonly transform = (parts: StreamPart[] | null): StreamPart[] | null => {
    if (parts === null) {
      const rest = this.flushAll()
      return rest.length ? [{ type: 'choices', choices: rest }] : null
    }
    const out: StreamPart[] = []
    for (const p of parts) {
      if (p.type === 'raw') this.push(out, (JSON.parse(p.json) as { choices: ChunkChoice[] }).choices)
      else if (p.type === 'choices') this.push(out, p.choices)
      else {
        if (p.type === 'end') {
          const rest = this.flushAll()
          if (rest.length) out.push({ type: 'choices', choices: rest })
        }
        out.push(p)
      }
    }
    return out
  }

  private push(out: StreamPart[], choices: ChunkChoice[]): void {
    const kept: ChunkChoice[] = []
    for (const c of choices) {
      const final = c.finish_reason !== null
      const d: ChunkDelta = { ...c.delta }
      for (const f of FIELDS) {
        const t = d[f]
        if (typeof t === 'string' && t) setText(d, f, this.feed(c.index, f, t, final))
      }
      if (d.tool_calls)
        d.tool_calls = d.tool_calls.map((tc) => {
          const args = tc.function?.arguments
          return args ? { ...tc, function: { ...tc.function, arguments: this.feed(c.index, `tool:${tc.index}`, args, final) } } : tc
        })
      if (final) this.flushChoice(c.index, d)
      if (final || Object.keys(d).some((k) => k !== 'content' || d.content)) kept.push({ ...c, delta: d })
    }
    if (kept.length) out.push({ type: 'choices', choices: kept })
  }

  /** One piece of one text: what can go out now. */
  private feed(index: number, field: string, text: string, final: boolean): string {
    let byField = this.held.get(index)
    if (!byField) this.held.set(index, (byField = new Map()))
    let h = byField.get(field)
    if (!h) byField.set(field, (h = { unscanned: '', unrestored: '' }))
    let scanned: string
    if (this.scans) {
      h.unscanned += text
      const cut = final ? h.unscanned.length : this.releasable(h.unscanned)
      scanned = this.guard.scanAnswer(h.unscanned.slice(0, cut))
      h.unscanned = h.unscanned.slice(cut)
    } else scanned = text
    h.unrestored += scanned
    const keep = final ? -1 : this.guard.partialPlaceholder(h.unrestored)
    const ready = keep < 0 ? h.unrestored : h.unrestored.slice(0, keep)
    h.unrestored = keep < 0 ? '' : h.unrestored.slice(keep)
    return this.guard.restore(ready)
  }

  /** How much of the unread text the output guardrails can read now: all but the longest value's length, never cutting a value or a key block. */
  private releasable(text: string): number {
    let cut = Math.max(0, text.length - MAX_ENTITY_CHARS - 2)
    if (!cut) return 0
    const block = openKeyBlock(text)
    if (block >= 0) cut = Math.min(cut, block)
    for (const h of this.guard.answerSpans(text)) if (h.start < cut && h.end > cut) cut = h.start
    return cut
  }

  /** Everything held for a choice that finishes, added to its last delta. */
  private flushChoice(index: number, d: ChunkDelta): void {
    const byField = this.held.get(index)
    if (!byField) return
    for (const [field, h] of byField) {
      const rest = this.drain(h)
      if (!rest) continue
      if (field.startsWith('tool:')) {
        const tcIndex = Number(field.slice(5))
        const calls: ToolCallDelta[] = (d.tool_calls ??= [])
        const tc = calls.find((x) => x.index === tcIndex)
        if (tc) tc.function = { ...tc.function, arguments: (tc.function?.arguments ?? '') + rest }
        else calls.push({ index: tcIndex, function: { arguments: rest } })
      } else setText(d, field as TextField, ((d[field] as string | undefined) ?? '') + rest)
    }
    this.held.delete(index)
  }

  private drain(h: Held): string {
    const scanned = this.scans && h.unscanned ? this.guard.scanAnswer(h.unscanned) : h.unscanned
    const text = this.guard.restore(h.unrestored + scanned)
    h.unscanned = h.unrestored = ''
    return text
  }

  private flushAll(): ChunkChoice[] {
    const out: ChunkChoice[] = []
    for (const index of [...this.held.keys()]) {
      const d: ChunkDelta = {}
      this.flushChoice(index, d)
      if (Object.keys(d).length) out.push({ index, delta: d, finish_reason: null })
    }
    return out
  }
}

function setText(d: ChunkDelta, f: TextField, text: string): void {
  if (text) d[f] = text
  else delete d[f]
}
