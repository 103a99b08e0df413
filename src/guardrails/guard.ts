// One request's guardrails (PRODUCT §19): the org's list run over the request's texts before any
// provider sees them (block, redact, mask with placeholders, webhook), over the answer's texts after
// (block, redact, and the masked values put back), and what the log may keep (never a value hidden).

import type { RE2JS } from 're2js'
import type { GuardrailRecord } from '../domain/log-entry'
import { GatewayError } from '../errors'
import type { ChatRequest, Choice } from '../providers/openai-types'
import { compilePattern, type Guardrail } from './config'
import { findEntities, type Found, type PiiEntity } from './entities'
import { callWebhook } from './webhook'

type TextGuardrail = Exclude<Guardrail, { kind: 'webhook' }>
type Webhook = Extract<Guardrail, { kind: 'webhook' }>

/** A value found by a text guardrail: where, and the kind it is. */
interface Hit {
  start: number
  end: number
  kind: string
}

/** A pii or regex guardrail, ready to run: what it finds in one text. */
class TextScreen {
  private readonly wanted: ReadonlySet<PiiEntity> | undefined
  private readonly patterns: RE2JS[] | undefined
  /** The placeholder's stem of a regex match: the guardrail's name. */
  private readonly label: string

  constructor(readonly g: TextGuardrail) {
    if (g.kind === 'pii') this.wanted = new Set(g.entities)
    else this.patterns = g.patterns.map((p, i) => compilePattern(p, ['guardrails', g.name, 'patterns', i]))
    this.label = g.name.toUpperCase().replace(/[^A-Z0-9]+/g, '_')
  }

  labelOf(kind: string): string {
    return kind === 'regex' ? this.label : kind.toUpperCase()
  }

  /**
   * `find` over a request's text of any size without holding the event loop: windows of 256 KiB that
   * overlap by more than the longest value a rule finds (a regex match longer than the overlap that
   * spans two windows is found in parts), the loop given back every 4 ms, stopped when the client leaves.
   */
  async findInWindows(text: string, signal: AbortSignal): Promise<Hit[]> {
    if (text.length <= WINDOW) return this.find(text)
    const hits: Hit[] = []
    let since = performance.now()
    for (let start = 0; ; start += WINDOW - OVERLAP) {
      const end = Math.min(text.length, start + WINDOW)
      for (const h of this.find(text.slice(start, end))) hits.push({ ...h, start: h.start + start, end: h.end + start })
      if (end === text.length) break
      if (performance.now() - since > YIELD_AFTER_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve))
        signal.throwIfAborted()
        since = performance.now()
      }
    }
    return firstLongest(hits)
  }

  find(text: string): Hit[] {
    if (this.wanted) return findEntities(text, this.wanted).map((f: Found) => ({ start: f.start, end: f.end, kind: f.entity }))
    const hits: Hit[] = []
    for (const re of this.patterns ?? []) {
      const m = re.matcher(text)
      // RE2: time linear in the text whatever the pattern; an empty match moves on by one.
      for (let from = 0; from <= text.length && m.find(from); ) {
        const [start, end] = [m.start(), m.end()]
        if (end > start) hits.push({ start, end, kind: 'regex' })
        from = end > start ? end : end + 1
      }
    }
    return firstLongest(hits)
  }
}

/** A request's text is scanned in windows of this many characters… */
const WINDOW = 262_144
/** …each overlapping the one before by this many (more than a private key block, the longest value found). */
const OVERLAP = 17_408
const YIELD_AFTER_MS = 4
/** Text shaped like a placeholder gw makes. */
const PLACEHOLDER_LIKE = /\[[A-Z0-9_]{1,80}_\d{1,9}\]/g
/** Above this many (values × characters), the log's scrub finds values by the rules rather than one by one. */
const SCRUB_SEARCH_LIMIT = 20_000_000

/** Hits that do not overlap, in order: the earliest, then the longest, wins. */
function firstLongest(hits: Hit[]): Hit[] {
  if (hits.length < 2) return hits
  hits.sort((a, b) => a.start - b.start || b.end - a.end)
  let until = -1
  return hits.filter((h) => (h.start >= until ? ((until = h.end), true) : false))
}

/** The texts of an answer's message. */
function answerSlots(m: Choice['message']): TextSlot[] {
  const slots: TextSlot[] = []
  if (m.content) slots.push({ get: () => m.content ?? '', set: (t) => (m.content = t) })
  if (m.refusal) slots.push({ get: () => m.refusal ?? '', set: (t) => (m.refusal = t) })
  if (m.reasoning_content) slots.push({ get: () => m.reasoning_content ?? '', set: (t) => (m.reasoning_content = t) })
  for (const tc of m.tool_calls ?? []) slots.push({ get: () => tc.function.arguments, set: (t) => (tc.function.arguments = t) })
  return slots
}

/** One guardrail per policy list (policies are cached objects): regexes compiled once. */
const prepared = new WeakMap<readonly Guardrail[], (TextScreen | Webhook)[]>()

function prepare(list: readonly Guardrail[]) {
  let p = prepared.get(list)
  if (!p) prepared.set(list, (p = list.map((g) => (g.kind === 'webhook' ? g : new TextScreen(g)))))
  return p
}

/** A place in a chat request that holds text sent upstream. */
export interface TextSlot {
  get(): string
  set(text: string): void
}

/** The texts of a chat request as sent upstream: message contents and text parts, tool call arguments. */
export function textSlots(body: ChatRequest): TextSlot[] {
  const slots: TextSlot[] = []
  for (const m of body.messages) {
    const msg = m as { content?: unknown; tool_calls?: { function: { arguments?: string } }[] }
    if (typeof msg.content === 'string') slots.push({ get: () => msg.content as string, set: (t) => (msg.content = t) })
    else if (Array.isArray(msg.content))
      for (const part of msg.content as { type?: string; text?: unknown }[])
        if (part.type === 'text' && typeof part.text === 'string') slots.push({ get: () => part.text as string, set: (t) => (part.text = t) })
    for (const tc of msg.tool_calls ?? [])
      if (typeof tc.function.arguments === 'string') slots.push({ get: () => tc.function.arguments as string, set: (t) => (tc.function.arguments = t) })
  }
  return slots
}

const describe: Record<string, string> = {
  email: 'an email address',
  phone: 'a phone number',
  credit_card: 'a credit card number',
  iban: 'an IBAN',
  us_ssn: 'a US social security number',
  ip_address: 'an IP address',
  secret: 'a secret (an API key or private key)',
  regex: 'text matching one of its patterns',
}

export const blocked = (name: string, kind: string, where: 'request' | 'answer') =>
  new GatewayError(400, 'guardrail_blocked', `Guardrail "${name}" blocked the ${where}: it contains ${describe[kind] ?? kind}`)

/**
 * The guardrails of one request. Built only when the org has some; `screenInput` runs before the
 * dispatch, `answer` (JSON) and `GuardedStream` (src/guardrails/stream.ts) on the way back, `scrub` on what the log keeps.
 */
export class Guard {
  readonly acted: GuardrailRecord[] = []
  /** Placeholder → value, for the values masked in this request. */
  private readonly values = new Map<string, string>()
  /** Value → placeholder (masked) or label (redacted, blocked): what the log shows instead. */
  private readonly hidden = new Map<string, string>()
  /** The last number given per label (`EMAIL` → 2 after `[EMAIL_2]`). */
  private readonly counters = new Map<string, number>()
  /** `hidden`, longest value first (the log's scrub), made when first needed after a change. */
  private byLength: [string, string][] | undefined
  private readonly screens
  /** The would-be placeholders the request already holds (`[EMAIL_1]` typed by the client): never made again. */
  private taken = new Set<string>()
  /** The longest placeholder made, for the stream's hold-back. */
  maxPlaceholder = 0
  /** The input guardrails have read the whole request (screenTexts is done). */
  private inputRead = false

  constructor(
    list: readonly Guardrail[],
    private readonly fetcher: typeof fetch,
  ) {
    this.screens = prepare(list)
  }

  /**
   * Do input guardrails apply that have not read the request yet (it was refused before they ran)? Its
   * body is then not logged: it may hold what they would hide (PRODUCT §19).
   */
  get inputUnread(): boolean {
    return !this.inputRead && this.screens.some((s) => (s instanceof TextScreen ? s.g.on : s.on) !== 'output')
  }

  /** Has any value been hidden (the log's bodies are then scrubbed)? */
  get hides(): boolean {
    return this.hidden.size > 0
  }

  /** Does any guardrail read the answer (output scans or webhooks, or restoring masked values)? */
  get readsAnswer(): boolean {
    return this.values.size > 0 || this.outputScreens().length > 0 || this.reviewsAnswer
  }

  /** Does a webhook read the answer (a stream is then held whole until it has answered)? */
  get reviewsAnswer(): boolean {
    return this.webhooks('output').length > 0
  }

  private webhooks(where: 'input' | 'output'): Webhook[] {
    return this.screens.filter((s): s is Webhook => !(s instanceof TextScreen) && (s.on === 'both' || s.on === where))
  }

  /** One webhook over texts: its verdict applied (texts rewritten in place), or the request refused. */
  private async ask(w: Webhook, texts: string[], where: 'request' | 'answer', signal: AbortSignal): Promise<void> {
    const r = await callWebhook(this.fetcher, w, texts, signal)
    this.note(w.name, r.action, [])
    if (r.action === 'deny') throw new GatewayError(400, 'guardrail_blocked', `Guardrail "${w.name}" blocked the ${where}${r.reason ? `: ${r.reason}` : ''}`)
    if (r.action === 'fail_closed')
      throw new GatewayError(503, 'gateway_error', `Guardrail "${w.name}" could not check the ${where} (${r.reason}) and fails closed: try again later`, {
        headers: { 'retry-after': '1' },
      })
    if (r.texts) r.texts.forEach((t, i) => (texts[i] = t))
  }

  /** The output webhooks over an answer's texts (as the provider wrote them, before masked values are put back), in the policy's order. */
  async reviewTexts(texts: string[], signal: AbortSignal): Promise<void> {
    for (const w of this.webhooks('output')) await this.ask(w, texts, 'answer', signal)
  }

  /** Runs the input guardrails over the request's texts, in the policy's order; throws 400 guardrail_blocked or 503. */
  async screenInput(body: ChatRequest, signal: AbortSignal): Promise<void> {
    return this.screenTexts(textSlots(body), signal)
  }

  /** The input guardrails over texts of a request (an embeddings request's inputs: its plan gives them). */
  async screenTexts(slots: TextSlot[], signal: AbortSignal): Promise<void> {
    for (const slot of slots) for (const m of slot.get().matchAll(PLACEHOLDER_LIKE)) this.taken.add(m[0])
    for (const s of this.screens) {
      if (s instanceof TextScreen) {
        if (s.g.on === 'output') continue
        for (const slot of slots) {
          const text = slot.get()
          slot.set(this.apply(s, text, s.g.action, 'request', await s.findInWindows(text, signal)))
        }
      } else if (s.on !== 'output') {
        const texts = slots.map((x) => x.get())
        await this.ask(s, texts, 'request', signal)
        texts.forEach((t, i) => slots[i]?.set(t))
      }
    }
    this.inputRead = true
  }

  private outputScreens(): TextScreen[] {
    return this.screens.filter((s): s is TextScreen => s instanceof TextScreen && s.g.on !== 'input')
  }

  /** Does any guardrail read the answer as the provider wrote it (block, redact)? */
  get scansAnswer(): boolean {
    return this.outputScreens().length > 0
  }

  /** One answer text through the output guardrails: block throws, redact (and mask) replace by the kind's label. */
  scanAnswer(text: string): string {
    for (const s of this.outputScreens()) text = this.apply(s, text, s.g.action === 'block' ? 'block' : 'redact', 'answer')
    return text
  }

  /** Where the output guardrails find values in a text (a stream does not cut one). */
  answerSpans(text: string): Hit[] {
    return this.outputScreens().flatMap((s) => s.find(text))
  }

  /** One answer text as the client gets it: the output guardrails, then the masked values put back. */
  answerText(text: string): string {
    return this.restore(this.scanAnswer(text))
  }

  /**
   * A JSON answer's texts, in place (content, refusal, thinking, tool call arguments): the output
   * guardrails, the output webhooks, then the masked values put back.
   */
  async answer(choices: Choice[], signal: AbortSignal): Promise<void> {
    if (!this.readsAnswer) return
    const slots = choices.flatMap((c) => answerSlots(c.message))
    const texts = slots.map((s) => this.scanAnswer(s.get()))
    await this.reviewTexts(texts, signal)
    texts.forEach((t, i) => slots[i]?.set(this.restore(t)))
  }

  /** The masked values put back: each placeholder gw made, and only those. */
  restore(text: string): string {
    if (!this.values.size || !text.includes('[')) return text
    let out = ''
    let from = 0
    for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) {
      const close = text.indexOf(']', i)
      if (close < 0) break
      const value = this.values.get(text.slice(i, close + 1))
      if (value === undefined) continue
      out += text.slice(from, i) + value
      from = close + 1
      i = close
    }
    return from ? out + text.slice(from) : text
  }

  /** Where a placeholder gw made may be starting at the end of `text` (a stream holds that back), or -1. */
  partialPlaceholder(text: string): number {
    if (!this.values.size) return -1
    const at = text.lastIndexOf('[')
    if (at < 0 || text.length - at >= this.maxPlaceholder || text.includes(']', at)) return -1
    const tail = text.slice(at)
    for (const p of this.values.keys()) if (p.startsWith(tail)) return at
    return -1
  }

  /** A value as the log may keep it: every value this request masked, redacted or was blocked for replaced. */
  scrubText(text: string): string {
    if (!this.hidden.size || !text) return text
    // Many values in a long text: found again by the same rules (linear in the text) instead of searched one by one.
    if (this.hidden.size * text.length > SCRUB_SEARCH_LIMIT) return this.scrubByRules(text)
    // Longest first, so a value inside a longer one never splits it.
    this.byLength ??= [...this.hidden].sort((a, b) => b[0].length - a[0].length)
    for (const [value, shown] of this.byLength) if (text.includes(value)) text = text.split(value).join(shown)
    return text
  }

  private scrubByRules(text: string): string {
    for (const s of this.screens) {
      if (!(s instanceof TextScreen)) continue
      let out = ''
      let from = 0
      for (const h of s.find(text)) {
        const shown = this.hidden.get(text.slice(h.start, h.end))
        if (shown === undefined) continue
        out += text.slice(from, h.start) + shown
        from = h.end
      }
      if (from) text = out + text.slice(from)
    }
    return text
  }

  /**
   * The JSON text of a body larger than the log keeps: its strings scrubbed until about `max`
   * characters have been written, the rest left empty (the log stores a preview of the first bytes).
   */
  scrubbedPreview(value: unknown, max: number): string {
    let budget = max
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v !== 'string') return v
      if (budget <= 0) return ''
      const s = this.scrubText(v)
      budget -= s.length + 8
      return s
    })
  }

  /** Any JSON value with scrubText applied to its strings (keys included). */
  scrub(value: unknown): unknown {
    if (!this.hidden.size) return value
    if (typeof value === 'string') return this.scrubText(value)
    if (Array.isArray(value)) return value.map((v) => this.scrub(v))
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.scrubText(k), this.scrub(v)]))
    return value
  }

  /** One text through one text guardrail. */
  private apply(s: TextScreen, text: string, action: 'block' | 'redact' | 'mask', where: 'request' | 'answer', found?: Hit[]): string {
    const hits = found ?? s.find(text)
    if (!hits.length) return text
    const kinds = [...new Set(hits.map((h) => h.kind))]
    this.note(s.g.name, action, kinds)
    if (action === 'block') {
      // The log keeps no value of a refused request either.
      for (const h of hits) this.hide(text.slice(h.start, h.end), `[${s.labelOf(h.kind)}]`)
      throw blocked(s.g.name, kinds[0] as string, where)
    }
    let out = ''
    let from = 0
    for (const h of hits) {
      const value = text.slice(h.start, h.end)
      out += text.slice(from, h.start) + (action === 'mask' ? this.placeholder(value, s.labelOf(h.kind)) : this.hide(value, `[${s.labelOf(h.kind)}]`))
      from = h.end
    }
    return out + text.slice(from)
  }

  /** The value's placeholder in this request (the same value, the same placeholder), never one the request already holds. */
  private placeholder(value: string, label: string): string {
    const known = this.hidden.get(value)
    if (known && this.values.has(known)) return known
    let n = this.counters.get(label) ?? 0
    let p: string
    do p = `[${label}_${++n}]`
    while (this.taken.has(p) || this.values.has(p))
    this.counters.set(label, n)
    this.values.set(p, value)
    this.maxPlaceholder = Math.max(this.maxPlaceholder, p.length)
    return this.hide(value, p)
  }

  private hide(value: string, shown: string): string {
    this.byLength = undefined
    if (!this.hidden.has(value)) this.hidden.set(value, shown)
    return shown
  }

  private note(name: string, action: string, kinds: string[]): void {
    const r = this.acted.find((a) => a.name === name && a.action === action)
    if (!r) this.acted.push({ name, action, entities: kinds })
    else for (const k of kinds) if (!r.entities.includes(k)) r.entities.push(k)
  }
}

/** The request's guardrails, or undefined when the org has none. */
export function guardFor(list: readonly Guardrail[] | undefined, fetcher: typeof fetch): Guard | undefined {
  return list?.length ? new Guard(list, fetcher) : undefined
}
