// A small JSON Schema checker for the subset structured output uses: type, properties, required, items,
// enum, const, anyOf/oneOf, additionalProperties, and local $ref. Other keywords are not checked.

type Schema = Record<string, unknown>

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
function resolve(ref: string, root: Schema): Schema | undefined {
  if (!ref.startsWith('#')) return undefined
  let cur: unknown = root
  for (const seg of ref.slice(1).split('/').filter(Boolean)) cur = isObject(cur) ? cur[seg.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined
  return isObject(cur) ? cur : undefined
}

function check(v: unknown, s: unknown, root: Schema, depth: number): boolean {
  if (s === true || s === undefined) return true
  if (s === false || !isObject(s) || depth > 64) return false
  if (typeof s.$ref === 'string') {
    const target = resolve(s.$ref, root)
    if (!target || !check(v, target, root, depth + 1)) return false
  }
  const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type.filter((t) => typeof t === 'string') : []
  if (types.length && !types.some((t) => typeOk(t, v))) return false
  if (Array.isArray(s.enum) && !s.enum.some((e) => Bun.deepEquals(e, v))) return false
  if ('const' in s && !Bun.deepEquals(s.const, v)) return false
  for (const k of ['anyOf', 'oneOf'] as const) {
    const alts = s[k]
    if (Array.isArray(alts) && !alts.some((a) => check(v, a, root, depth + 1))) return false
  }
  if (isObject(v)) {
    const props = isObject(s.properties) ? s.properties : {}
    if (Array.isArray(s.required) && !s.required.every((r) => typeof r !== 'string' || r in v)) return false
    for (const [k, val] of Object.entries(v)) {
      const sub = k in props ? props[k] : (s.additionalProperties ?? true)
      if (!check(val, sub, root, depth + 1)) return false
    }
  }
  if (Array.isArray(v) && s.items !== undefined && !v.every((item) => check(item, s.items, root, depth + 1))) return false
  return true
}

/** Does `value` satisfy `schema` (within the subset above)? */
export function matchesSchema(value: unknown, schema: Schema): boolean {
  return check(value, schema, schema, 0)
}
