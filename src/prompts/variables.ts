// Prompt variables: names, declared types, and coercion of run-time values to those types (the seed's table).

import { badRequest } from '../errors'
import type { VariableDef, VariableType } from '../domain/prompt'

export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

const TRUE = new Set(['true', '1', 'yes'])
const FALSE = new Set(['false', '0', 'no'])

function cannot(name: string, type: VariableType, why: string): never {
  throw badRequest(`Variable "${name}" must be a ${type}: ${why}`)
}

/** One value to its declared type, or a 400 naming the variable and the type. */
export function coerce(name: string, type: VariableType, v: unknown): unknown {
  switch (type) {
    case 'string':
      if (typeof v === 'string') return v
      if (typeof v === 'number' || typeof v === 'boolean') return String(v)
      return cannot(name, type, 'got an object or array')
    case 'number': {
      if (typeof v === 'number' && Number.isFinite(v)) return v
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
      if (Number.isFinite(n)) return n
      return cannot(name, type, `${JSON.stringify(v)?.slice(0, 40)} is not a number or a numeric string`)
    }
    case 'boolean':
      if (typeof v === 'boolean') return v
      if (typeof v === 'string' && TRUE.has(v.trim().toLowerCase())) return true
      if (typeof v === 'string' && FALSE.has(v.trim().toLowerCase())) return false
      return cannot(name, type, 'expected true/false, "true"/"false", "1"/"0" or "yes"/"no"')
    // Compact JSON text (PRODUCT §7): the JSON text `"plain"` keeps its quotes, an object loses its spaces.
    case 'json':
      if (typeof v !== 'string') return JSON.stringify(v)
      try {
        return JSON.stringify(JSON.parse(v))
      } catch {
        return cannot(name, type, 'the string is not valid JSON')
      }
  }
}

/**
 * The values a template is rendered with: declared variables coerced (a missing required one is a
 * 400 naming it, a missing optional one renders as ''); passed but undeclared ones as given.
 */
export function resolveVariables(defs: readonly VariableDef[], raw: Record<string, unknown>): Record<string, unknown> {
  for (const name of Object.keys(raw))
    if (!VARIABLE_NAME.test(name)) throw badRequest(`Invalid variable name "${name.slice(0, 80)}": expected [A-Za-z_][A-Za-z0-9_]*`)
  const out: Record<string, unknown> = { ...raw }
  for (const d of defs) {
    const v = raw[d.name]
    if (v === undefined || v === null) {
      if (d.required) throw badRequest(`Missing required variable "${d.name}" (${d.type})`)
      delete out[d.name]
      continue
    }
    out[d.name] = coerce(d.name, d.type, v)
  }
  return out
}
