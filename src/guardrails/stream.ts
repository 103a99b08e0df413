// A streamed answer through the request's guardrails (PRODUCT §19): each text of each choice (content,
// refusal, thinking, each tool call's arguments) is held back just enough for the output guardrails to
// see a whole value and for a placeholder split across chunks to be put back whole; the held text goes
// out with the choice's finish, or before the stream's end. With an output webhook the whole answer is
// held until the webhook has read it (HeldStream). Works on parsed parts only.

import type { PartsTransform } from '../pipeline/6-normalise'
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
      if (p.type === 'choices') this.push(out, p.choices)
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

/** The transform of a guarded stream: held whole when a webhook reads the answer, else piece by piece. */
export function guardedTransform(guard: Guard, signal: AbortSignal): PartsTransform {
  return guard.reviewsAnswer ? new HeldStream(guard, signal).transform : new GuardedStream(guard).transform
}

/** One choice of a held stream, as it came. */
interface HeldChoice {
  index: number
  content: string
  refusal: string
  reasoning: string
  tools: Map<number, { id?: string; name: string; args: string }>
  finish: ChunkChoice['finish_reason']
}

/**
 * A stream read whole before any of its text goes out, for an output webhook: at its end the texts go
 * through the output guardrails, the webhooks and the restore (as a JSON answer's do), and each choice
 * is written as one delta and its finish. Usage, meta and failures pass as they come.
 */
export class HeldStream {
  private readonly choices = new Map<number, HeldChoice>()
  private done = false

  constructor(
    private readonly guard: Guard,
    private readonly signal: AbortSignal,
  ) {}

  readonly transform = async (parts: StreamPart[] | null): Promise<StreamPart[] | null> => {
    if (parts === null) return this.done ? null : ((this.done = true), await this.release())
    const out: StreamPart[] = []
    for (const p of parts) {
      if (p.type === 'choices') this.take(p.choices)
      else if (p.type === 'end') {
        this.done = true
        out.push(...(await this.release()), p)
      } else out.push(p)
    }
    return out
  }

  private take(choices: ChunkChoice[]): void {
    for (const c of choices) {
      let h = this.choices.get(c.index)
      if (!h) this.choices.set(c.index, (h = { index: c.index, content: '', refusal: '', reasoning: '', tools: new Map(), finish: null }))
      const d = c.delta
      h.content += d.content ?? ''
      h.refusal += d.refusal ?? ''
      h.reasoning += d.reasoning_content ?? ''
      for (const tc of d.tool_calls ?? []) {
        let t = h.tools.get(tc.index)
        if (!t) h.tools.set(tc.index, (t = { name: '', args: '' }))
        if (tc.id) t.id = tc.id
        t.name += tc.function?.name ?? ''
        t.args += tc.function?.arguments ?? ''
      }
      if (c.finish_reason) h.finish = c.finish_reason
    }
  }

  /** The held answer, read by the guardrails and written out. */
  private async release(): Promise<StreamPart[]> {
    const held = [...this.choices.values()]
    const slots: { get(): string; set(t: string): void }[] = []
    for (const h of held) {
      for (const f of ['content', 'refusal', 'reasoning'] as const) if (h[f]) slots.push({ get: () => h[f], set: (t) => (h[f] = t) })
      for (const t of h.tools.values()) if (t.args) slots.push({ get: () => t.args, set: (x) => (t.args = x) })
    }
    const texts = slots.map((s) => this.guard.scanAnswer(s.get()))
    await this.guard.reviewTexts(texts, this.signal)
    texts.forEach((t, i) => slots[i]?.set(this.guard.restore(t)))
    const out: StreamPart[] = []
    for (const h of held) {
      const delta: ChunkDelta = { role: 'assistant' }
      if (h.content) delta.content = h.content
      if (h.refusal) delta.refusal = h.refusal
      if (h.reasoning) delta.reasoning_content = h.reasoning
      if (h.tools.size)
        delta.tool_calls = [...h.tools].map(([index, t]) => ({ index, ...(t.id ? { id: t.id, type: 'function' as const } : {}), function: { name: t.name, arguments: t.args } }))
      out.push({ type: 'choices', choices: [{ index: h.index, delta, finish_reason: null }] })
      if (h.finish) out.push({ type: 'choices', choices: [{ index: h.index, delta: {}, finish_reason: h.finish }] })
    }
    this.choices.clear()
    return out
  }
}
