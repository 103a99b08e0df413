// Describes a TypeBox (JSON Schema) object's properties one line each, for `--help` texts generated from the schema itself.

import type { TSchema } from '@sinclair/typebox'

interface Json {
  type?: string
  const?: unknown
  anyOf?: Json[]
  items?: Json
  properties?: Record<string, Json>
  required?: string[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  minLength?: number
  maxItems?: number
  description?: string
}

/** A schema as a short phrase: `integer ≥ 1`, `org|key|endUser`, `list of {…}`. */
function phrase(s: Json): string {
  if (s.anyOf) return s.anyOf.map(phrase).join('|')
  if (s.const !== undefined) return String(s.const)
  if (s.type === 'array') return `list of ${phrase(s.items ?? {})}${s.items?.type === 'string' ? 's' : ''}${s.maxItems !== undefined ? ` (at most ${s.maxItems})` : ''}`
  if (s.type === 'object')
    return `{${Object.entries(s.properties ?? {})
      .map(([k, v]) => `${k}${s.required?.includes(k) ? '' : '?'}: ${phrase(v)}`)
      .join(', ')}}`
  if (s.type === 'boolean') return 'true or false'
  if (s.type === 'integer' || s.type === 'number') {
    const lower = s.minimum !== undefined ? `≥ ${s.minimum}` : s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}` : undefined
    const upper = s.maximum !== undefined ? `≤ ${s.maximum}` : undefined
    return `${s.type}${lower || upper ? ` ${[lower, upper].filter(Boolean).join(' and ')}` : ''}`
  }
  return s.type ?? 'any'
}

/** `name  type  description` for each property of an object schema, in the schema's order. */
export function schemaFieldLines(schema: TSchema): string[] {
  const s = schema as Json
  const entries = Object.entries(s.properties ?? {})
  const width = Math.max(...entries.map(([k]) => k.length)) + 2
  return entries.map(([k, v]) => `${k.padEnd(width)}${phrase(v)}${v.description ? `  ${v.description}` : ''}`)
}
