// Blocked-term search (PRODUCT §6): every string of a request read once for all of the org's terms
// (an Aho–Corasick automaton), without recursion, giving the event loop back as it goes (docs/security.md).

/** Strings are lower-cased and scanned in pieces of at most this many characters. */
const PIECE_CHARS = 65_536
/** The event loop is given back after this much scanning. */
const YIELD_AFTER_MS = 4

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The org's terms, case-insensitive, as one automaton over UTF-16 code units. */
export class TermMatcher {
  /** Transitions out of each state. */
  private readonly goto: Map<number, number>[] = [new Map()]
  /** The state for the longest proper suffix that is also a prefix of a term. */
  private readonly fail: number[] = [0]
  /** The first-listed term that ends in each state (through its suffixes too), or -1. */
  private readonly hit: number[] = [-1]

  constructor(private readonly terms: readonly string[]) {
    terms.forEach((term, i) => {
      let state = 0
      for (const c of codes(term.toLowerCase())) {
        let to = this.goto[state]?.get(c)
        if (to === undefined) {
          to = this.goto.length
          this.goto.push(new Map())
          this.fail.push(0)
          this.hit.push(-1)
          this.goto[state]?.set(c, to)
        }
        state = to
      }
      if (this.hit[state] === -1) this.hit[state] = i
    })
    // Breadth first, so each state's fail state is complete before its children are.
    const queue = [...(this.goto[0] as Map<number, number>).values()]
    for (let q = 0; q < queue.length; q++) {
      const state = queue[q] as number
      for (const [c, child] of this.goto[state] as Map<number, number>) {
        let f = this.fail[state] as number
        while (f !== 0 && !this.goto[f]?.has(c)) f = this.fail[f] as number
        const to = this.goto[f]?.get(c)
        this.fail[child] = to !== undefined && to !== child ? to : 0
        const inherited = this.hit[this.fail[child] as number] as number
        const own = this.hit[child] as number
        if (inherited !== -1 && (own === -1 || inherited < own)) this.hit[child] = inherited
        queue.push(child)
      }
    }
  }

  /**
   * The first blocked term found in any string of `values` (keys of objects included), or undefined.
   * Each string is read once, whatever the number of terms; `signal` stops it when the client leaves.
   */
  async find(values: unknown[], signal?: AbortSignal): Promise<string | undefined> {
    if (this.hit[0] !== -1) return stringsIn(values).next().done ? undefined : this.terms[this.hit[0] as number]
    let since = performance.now()
    for (const s of stringsIn(values)) {
      let state = 0
      for (let i = 0; i < s.length; ) {
        // A piece does not end between the two halves of a surrogate pair (lower-casing needs both).
        let end = Math.min(i + PIECE_CHARS, s.length)
        if (end < s.length && isHighSurrogate(s.charCodeAt(end - 1))) end++
        const piece = s.slice(i, end).toLowerCase()
        i = end
        for (let j = 0; j < piece.length; j++) {
          const c = piece.charCodeAt(j)
          let to = this.goto[state]?.get(c)
          while (to === undefined && state !== 0) {
            state = this.fail[state] as number
            to = this.goto[state]?.get(c)
          }
          state = to ?? 0
          const found = this.hit[state] as number
          if (found !== -1) return this.terms[found]
        }
        if (performance.now() - since > YIELD_AFTER_MS) {
          await nextTurn()
          signal?.throwIfAborted()
          since = performance.now()
        }
      }
    }
    return undefined
  }
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff

function* codes(s: string): Generator<number> {
  for (let i = 0; i < s.length; i++) yield s.charCodeAt(i)
}

/** Every string (and object key) in JSON values: an explicit stack of cursors, so any length and any depth. */
function* stringsIn(values: unknown[]): Generator<string> {
  const stack: { items: unknown[]; next: number }[] = [{ items: values, next: 0 }]
  while (stack.length) {
    const top = stack[stack.length - 1] as (typeof stack)[number]
    if (top.next === top.items.length) {
      stack.pop()
      continue
    }
    const v = top.items[top.next++]
    if (typeof v === 'string') yield v
    else if (Array.isArray(v)) stack.push({ items: v, next: 0 })
    else if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v)
      for (const k of keys) yield k
      stack.push({ items: keys.map((k) => (v as Record<string, unknown>)[k]), next: 0 })
    }
  }
}
