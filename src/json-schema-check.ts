// A small JSON Schema checker for the subset structured output uses (type, properties, required, items,
// enum, const, anyOf/oneOf/allOf, additionalProperties, local $ref), bounded in work (docs/security.md).
// Nothing here recurses: schemas and values are walked with explicit stacks, whatever their depth.

type Schema = Record<string, unknown>

/** Schemas larger than this (subschema nodes) are refused when the request arrives. */
export const MAX_SCHEMA_NODES = 5_000
/** Schemas whose `enum` and `const` values hold more JSON values than this in all are refused too. */
export const MAX_SCHEMA_LITERALS = 100_000
/**
 * Most work one answer check does, in units: a (subschema, value) pair visited costs PAIR_WORK, an
 * enum or const value indexed or compared costs one unit per JSON value in it. Past it the answer is
 * logged as not checked. At most 100,000 pairs, as before enum work was counted.
 */
const MAX_CHECK_WORK = 1_000_000
const PAIR_WORK = 10
/** Pairs decided, and enum values indexed, between two chances to give the event loop back. */
const PAIRS_PER_STEP = 256
const INDEX_SLICE = 4_096
/** An answer check gives the event loop back after this much work. */
const YIELD_AFTER_MS = 4

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function typeOk(type: string, v: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(v)
    case 'array':
      return Array.isArray(v)
    case 'string':
      return typeof v === 'string'
    case 'number':
      return typeof v === 'number' && Number.isFinite(v)
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v)
    case 'boolean':
      return typeof v === 'boolean'
    case 'null':
      return v === null
    default:
      return true
  }
}

/** How many JSON values `v` holds (itself included), counted without recursion. */
function jsonValues(v: unknown): number {
  let n = 0
  const stack: unknown[] = [v]
  while (stack.length) {
    const x = stack.pop()
    n++
    if (Array.isArray(x)) for (const item of x) stack.push(item)
    else if (typeof x === 'object' && x !== null) for (const k in x) stack.push((x as Schema)[k])
  }
  return n
}

/** Resolves `#/$defs/x`-style references against the root schema. */
function resolve(ref: string, root: Schema): unknown {
  if (!ref.startsWith('#')) return undefined
  let cur: unknown = root
  for (const seg of ref.slice(1).split('/').filter(Boolean)) {
    const key = seg.replace(/~1/g, '/').replace(/~0/g, '~')
    cur = isObject(cur) ? cur[key] : Array.isArray(cur) ? cur[Number(key)] : undefined
  }
  return isObject(cur) || typeof cur === 'boolean' ? cur : undefined
}

const ALTERNATIVES = ['anyOf', 'oneOf', 'allOf'] as const

/** Subschemas checked against the same value as `s` (no descent into the value): $ref target and alternatives. */
function sameValueChildren(s: Schema, root: Schema): unknown[] {
  const out: unknown[] = []
  if (typeof s.$ref === 'string') out.push(resolve(s.$ref, root))
  for (const k of ALTERNATIVES) if (Array.isArray(s[k])) for (const a of s[k] as unknown[]) out.push(a)
  return out
}

/** Subschemas checked against a part of the value (pushed onto `out`). */
function pushDescendingChildren(s: Schema, out: unknown[]): void {
  if (isObject(s.properties)) for (const k in s.properties) out.push(s.properties[k])
  for (const k of ['items', 'additionalProperties'] as const) if (s[k] !== undefined) out.push(s[k])
  for (const k of ['$defs', 'definitions'] as const) {
    const defs = s[k]
    if (isObject(defs)) for (const name in defs) out.push(defs[name])
  }
}

/**
 * Why the gateway will not check answers against this schema, or undefined when it will: too many
 * nodes or enum/const values, a `$ref` that is not local or does not resolve, or references that
 * loop back to a schema without descending into the value (`{"anyOf":[{"$ref":"#"}]}`), which no
 * value can terminate.
 */
export function schemaProblem(root: Schema): string | undefined {
  // A request's schema is looked at when it arrives and again with its answer: the walk is done once.
  if (problems.has(root)) return problems.get(root)
  const why = findProblem(root)
  problems.set(root, why)
  return why
}

/** Answers of schemaProblem, per schema object (schemas are not changed once a request is read). */
const problems = new WeakMap<Schema, string | undefined>()

function findProblem(root: Schema): string | undefined {
  const seen = new Set<Schema>()
  const stack: unknown[] = [root]
  let literals = 0
  while (stack.length) {
    const s = stack.pop()
    if (!isObject(s) || seen.has(s)) continue
    seen.add(s)
    if (seen.size > MAX_SCHEMA_NODES) return `it has more than ${MAX_SCHEMA_NODES} subschemas`
    if (s.$ref !== undefined) {
      if (typeof s.$ref !== 'string' || resolve(s.$ref, root) === undefined)
        return `"$ref" ${JSON.stringify(String(s.$ref).slice(0, 64))} is not a reference inside the schema`
    }
    if (s.enum !== undefined) literals += jsonValues(s.enum)
    if ('const' in s) literals += jsonValues(s.const)
    if (literals > MAX_SCHEMA_LITERALS) return `its "enum" and "const" values hold more than ${MAX_SCHEMA_LITERALS} JSON values`
    for (const c of sameValueChildren(s, root)) stack.push(c)
    pushDescendingChildren(s, stack)
  }
  return sameValueLoop(seen, root) ? 'its "$ref"s loop back without descending into a property or an item' : undefined
}

/** Is there a cycle through same-value edges only? Depth-first search with colours and an explicit stack. */
function sameValueLoop(schemas: Set<Schema>, root: Schema): boolean {
  const state = new Map<Schema, 'open' | 'done'>()
  for (const start of schemas) {
    if (state.has(start)) continue
    state.set(start, 'open')
    const path = [{ s: start, children: sameValueChildren(start, root), next: 0 }]
    while (path.length) {
      const top = path[path.length - 1] as (typeof path)[number]
      if (top.next === top.children.length) {
        state.set(top.s, 'done')
        path.pop()
        continue
      }
      const c = top.children[top.next++]
      if (!isObject(c)) continue
      const st = state.get(c)
      if (st === 'open') return true
      if (st === 'done') continue
      state.set(c, 'open')
      path.push({ s: c, children: sameValueChildren(c, root), next: 0 })
    }
  }
  return false
}

/** Does checking a value against `s` involve other subschemas against the same value ($ref, alternatives)? */
const needsOthers = (s: Schema) => s.$ref !== undefined || ALTERNATIVES.some((k) => s[k] !== undefined)

class Budget extends Error {}

/** A (value, subschema) pair whose answer a decision needs before it can go on. */
type Need = readonly [value: unknown, schema: unknown]
/** The decision of one pair: yields the pairs it needs, receives their answers, returns its own. */
type Decision = Generator<Need, boolean, boolean>

/** An enum's values, indexed once: primitives in a set, the others with their size (their comparison cost). */
interface EnumIndex {
  primitives: Set<unknown>
  others: { value: unknown; size: number }[]
}

/**
 * A checker for one answer: each (subschema, value) pair is decided once (memoised), and the work
 * (pairs visited, enum and const values indexed or compared) is at most MAX_CHECK_WORK units, so it
 * is bounded whatever the schema's shape. Decisions wait on an explicit stack, not the call stack,
 * so a value nested thousands of levels deep is checked (or given up) like a flat one.
 */
class Checker {
  private work = 0
  private readonly memo = new Map<object, Map<unknown, boolean>>()
  private readonly enums = new Map<unknown[], EnumIndex>()
  private readonly consts = new Map<Schema, number>()

  constructor(private readonly root: Schema) {}

  /**
   * Decides `value` against `schema`, yielding now and then (between pairs, and every INDEX_SLICE enum
   * values indexed) so a caller can give the event loop back: first the schema's enums are indexed,
   * then the pairs are decided.
   */
  *steps(value: unknown, schema: unknown): Generator<void, boolean> {
    for (const values of enumsIn(this.root)) if (!this.enums.has(values)) yield* this.buildIndex(values)
    const pending: { decision: Decision; byValue: Map<unknown, boolean>; value: unknown }[] = []
    const enter = (v: unknown, s: unknown): boolean | undefined => {
      if (s === true || s === undefined) return true
      if (s === false || !isObject(s)) return false
      this.spend(PAIR_WORK)
      // A primitive against a schema that needs no other pair: decided at once, nothing to remember.
      if ((typeof v !== 'object' || v === null) && !needsOthers(s)) return this.local(v, s)
      let byValue = this.memo.get(s)
      const known = byValue?.get(v)
      if (known !== undefined) return known
      // A pair met again while it is being decided is a loop schemaProblem refuses; false ends it.
      if (!byValue) this.memo.set(s, (byValue = new Map()))
      byValue.set(v, false)
      pending.push({ decision: this.decide(v, s), byValue, value: v })
      return undefined
    }
    let answer = enter(value, schema) ?? false
    for (let n = 1; pending.length; n++) {
      if (n % PAIRS_PER_STEP === 0) yield
      const top = pending[pending.length - 1] as (typeof pending)[number]
      // A decision's first step ignores the answer it is given.
      const step = top.decision.next(answer)
      if (step.done) {
        top.byValue.set(top.value, step.value)
        pending.pop()
        answer = step.value
        continue
      }
      const [v, s] = step.value
      const known = enter(v, s)
      if (known !== undefined) answer = known
    }
    return answer
  }

  private spend(units: number): void {
    this.work += units
    if (this.work > MAX_CHECK_WORK) throw new Budget()
  }

  /** What `s` says of `v` on its own: type, enum and const. */
  private local(v: unknown, s: Schema): boolean {
    const t = s.type
    if (typeof t === 'string' ? !typeOk(t, v) : Array.isArray(t) && t.some((x) => typeof x === 'string') && !t.some((x) => typeof x === 'string' && typeOk(x, v)))
      return false
    if (Array.isArray(s.enum) && !this.inEnum(s.enum, v)) return false
    return !('const' in s) || this.isConst(s, v)
  }

  private *decide(v: unknown, s: Schema): Decision {
    if (typeof s.$ref === 'string' && !(yield [v, resolve(s.$ref, this.root)])) return false
    if (!this.local(v, s)) return false
    for (const k of ['anyOf', 'oneOf'] as const) {
      const alts = s[k]
      if (!Array.isArray(alts)) continue
      let any = false
      for (const a of alts) if ((any = yield [v, a])) break
      if (!any) return false
    }
    if (Array.isArray(s.allOf)) for (const a of s.allOf) if (!(yield [v, a])) return false
    if (isObject(v)) {
      const props = isObject(s.properties) ? s.properties : {}
      if (Array.isArray(s.required) && !s.required.every((r) => typeof r !== 'string' || Object.hasOwn(v, r))) return false
      for (const k in v) {
        const sub = Object.hasOwn(props, k) ? props[k] : (s.additionalProperties ?? true)
        if (!(yield [v[k], sub])) return false
      }
    }
    if (Array.isArray(v) && s.items !== undefined) for (const item of v) if (!(yield [item, s.items])) return false
    return true
  }

  /** Indexes an enum's values (charged to the work), yielding every INDEX_SLICE of them. */
  private *buildIndex(values: unknown[]): Generator<void, EnumIndex> {
    const index: EnumIndex = { primitives: new Set(), others: [] }
    for (let i = 0; i < values.length; i++) {
      if (i % INDEX_SLICE === INDEX_SLICE - 1) yield
      const e = values[i]
      if (typeof e === 'object' && e !== null) {
        const size = jsonValues(e)
        this.spend(size)
        index.others.push({ value: e, size })
      } else {
        this.spend(1)
        index.primitives.add(e)
      }
    }
    this.enums.set(values, index)
    return index
  }

  private inEnum(values: unknown[], v: unknown): boolean {
    const index = this.enums.get(values) ?? runToEnd(this.buildIndex(values))
    this.spend(1)
    if (typeof v !== 'object' || v === null) return index.primitives.has(v)
    for (const e of index.others) {
      this.spend(e.size)
      if (Bun.deepEquals(e.value, v)) return true
    }
    return false
  }

  private isConst(s: Schema, v: unknown): boolean {
    let size = this.consts.get(s)
    if (size === undefined) this.consts.set(s, (size = jsonValues(s.const)))
    this.spend(size)
    return Bun.deepEquals(s.const, v)
  }
}

/** Runs a generator of steps to its end, without pausing. */
function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
  }
}

/** The `enum` arrays of a schema's subschemas (every subschema is reached: schemaProblem bounds their number). */
function* enumsIn(root: Schema): Generator<unknown[]> {
  const seen = new Set<Schema>()
  const stack: unknown[] = [root]
  while (stack.length) {
    const s = stack.pop()
    if (!isObject(s) || seen.has(s)) continue
    seen.add(s)
    if (Array.isArray(s.enum)) yield s.enum
    for (const c of sameValueChildren(s, root)) stack.push(c)
    pushDescendingChildren(s, stack)
  }
}

/**
 * Does `value` satisfy `schema` (within the subset above)? null when the check would take more
 * than MAX_CHECK_WORK units or the schema is one schemaProblem refuses: the answer is not checked.
 */
export function matchesSchema(value: unknown, schema: Schema): boolean | null {
  if (schemaProblem(schema) !== undefined) return null
  try {
    return runToEnd(new Checker(schema).steps(value, schema))
  } catch (err) {
    if (err instanceof Budget) return null
    throw err
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** matchesSchema, giving the event loop back after every YIELD_AFTER_MS of work (how answers are checked). */
export async function matchesSchemaInTurns(value: unknown, schema: Schema): Promise<boolean | null> {
  if (schemaProblem(schema) !== undefined) return null
  const steps = new Checker(schema).steps(value, schema)
  let since = performance.now()
  try {
    for (;;) {
      const step = steps.next()
      if (step.done) return step.value
      if (performance.now() - since > YIELD_AFTER_MS) {
        await nextTurn()
        since = performance.now()
      }
    }
  } catch (err) {
    if (err instanceof Budget) return null
    throw err
  }
}
