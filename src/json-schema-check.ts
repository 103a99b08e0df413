// A small JSON Schema checker for the subset structured output uses (type, properties, required, items,
// enum, const, anyOf/oneOf/allOf, additionalProperties, local $ref), bounded in work (docs/security.md).

type Schema = Record<string, unknown>

/** Schemas larger than this (subschema nodes) are refused when the request arrives. */
export const MAX_SCHEMA_NODES = 5_000
/** Most (subschema, value) pairs one answer check visits; past it the answer is logged as not checked. */
const MAX_CHECK_STEPS = 100_000

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
  for (const k of ALTERNATIVES) if (Array.isArray(s[k])) out.push(...(s[k] as unknown[]))
  return out
}

/** Subschemas checked against a part of the value. */
function descendingChildren(s: Schema): unknown[] {
  const out: unknown[] = []
  if (isObject(s.properties)) out.push(...Object.values(s.properties))
  for (const k of ['items', 'additionalProperties'] as const) if (s[k] !== undefined) out.push(s[k])
  for (const k of ['$defs', 'definitions'] as const) if (isObject(s[k])) out.push(...Object.values(s[k] as Schema))
  return out
}

/**
 * Why the gateway will not check answers against this schema, or undefined when it will: too many
 * nodes, a `$ref` that is not local or does not resolve, or references that loop back to a schema
 * without descending into the value (`{"anyOf":[{"$ref":"#"}]}`), which no value can terminate.
 */
export function schemaProblem(root: Schema): string | undefined {
  const seen = new Set<Schema>()
  const stack: unknown[] = [root]
  while (stack.length) {
    const s = stack.pop()
    if (!isObject(s) || seen.has(s)) continue
    seen.add(s)
    if (seen.size > MAX_SCHEMA_NODES) return `it has more than ${MAX_SCHEMA_NODES} subschemas`
    if (s.$ref !== undefined) {
      if (typeof s.$ref !== 'string' || resolve(s.$ref, root) === undefined)
        return `"$ref" ${JSON.stringify(String(s.$ref).slice(0, 64))} is not a reference inside the schema`
    }
    stack.push(...sameValueChildren(s, root), ...descendingChildren(s))
  }
  // A cycle through same-value edges only: depth-first search with colours.
  const state = new Map<Schema, 'open' | 'done'>()
  const loops = (s: unknown): boolean => {
    if (!isObject(s)) return false
    const st = state.get(s)
    if (st) return st === 'open'
    state.set(s, 'open')
    for (const c of sameValueChildren(s, root)) if (loops(c)) return true
    state.set(s, 'done')
    return false
  }
  for (const s of seen) if (loops(s)) return 'its "$ref"s loop back without descending into a property or an item'
  return undefined
}

class Budget extends Error {}

/**
 * A checker for one answer: each (subschema, value) pair is decided once (memoised), and at most
 * MAX_CHECK_STEPS pairs are visited, so the work is bounded whatever the schema's shape.
 */
class Checker {
  private steps = 0
  private readonly memo = new Map<object, Map<unknown, boolean>>()

  constructor(private readonly root: Schema) {}

  check(v: unknown, s: unknown): boolean {
    if (s === true || s === undefined) return true
    if (s === false || !isObject(s)) return false
    let byValue = this.memo.get(s)
    const known = byValue?.get(v)
    if (known !== undefined) return known
    if (++this.steps > MAX_CHECK_STEPS) throw new Budget()
    // A pair met again while it is being decided is a loop schemaProblem refuses; false ends it.
    if (!byValue) this.memo.set(s, (byValue = new Map()))
    byValue.set(v, false)
    const ok = this.decide(v, s)
    byValue.set(v, ok)
    return ok
  }

  private decide(v: unknown, s: Schema): boolean {
    if (typeof s.$ref === 'string' && !this.check(v, resolve(s.$ref, this.root))) return false
    const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type.filter((t) => typeof t === 'string') : []
    if (types.length && !types.some((t) => typeOk(t, v))) return false
    if (Array.isArray(s.enum) && !s.enum.some((e) => Bun.deepEquals(e, v))) return false
    if ('const' in s && !Bun.deepEquals(s.const, v)) return false
    for (const k of ['anyOf', 'oneOf'] as const) {
      const alts = s[k]
      if (Array.isArray(alts) && !alts.some((a) => this.check(v, a))) return false
    }
    if (Array.isArray(s.allOf) && !s.allOf.every((a) => this.check(v, a))) return false
    if (isObject(v)) {
      const props = isObject(s.properties) ? s.properties : {}
      if (Array.isArray(s.required) && !s.required.every((r) => typeof r !== 'string' || r in v)) return false
      for (const [k, val] of Object.entries(v)) {
        const sub = Object.hasOwn(props, k) ? props[k] : (s.additionalProperties ?? true)
        if (!this.check(val, sub)) return false
      }
    }
    if (Array.isArray(v) && s.items !== undefined && !v.every((item) => this.check(item, s.items))) return false
    return true
  }
}

/**
 * Does `value` satisfy `schema` (within the subset above)? null when the check would take more
 * than MAX_CHECK_STEPS steps or the schema is one schemaProblem refuses: the answer is not checked.
 */
export function matchesSchema(value: unknown, schema: Schema): boolean | null {
  if (schemaProblem(schema) !== undefined) return null
  try {
    return new Checker(schema).check(value, schema)
  } catch (err) {
    if (err instanceof Budget) return null
    throw err
  }
}
