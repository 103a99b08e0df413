// Renders prompt templates: `{{> partial}}` expanded first (nested, cycle- and depth-checked), then `{{variable}}`.

import { badRequest } from '../errors'

export const MAX_PARTIAL_DEPTH = 8
const PARTIAL = /\{\{>\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*\}\}/g
const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g

/** Replaces partial tags by their templates, recursively; a missing partial is an empty string. */
export function expandPartials(template: string, partials: ReadonlyMap<string, string>, trail: readonly string[] = []): string {
  return template.replace(PARTIAL, (_tag, name: string) => {
    if (trail.includes(name)) throw badRequest(`Partials form a cycle: ${[...trail, name].join(' → ')}`)
    if (trail.length >= MAX_PARTIAL_DEPTH)
      throw badRequest(`Partials nested deeper than ${MAX_PARTIAL_DEPTH} levels: ${[...trail, name].join(' → ')}`)
    const body = partials.get(name)
    return body === undefined ? '' : expandPartials(body, partials, [...trail, name])
  })
}

/** Inserts values as they are (no HTML escaping); non-strings as compact JSON; unknown names as ''. One pass: values are never re-scanned. */
export function substituteVariables(template: string, values: Readonly<Record<string, unknown>>): string {
  return template.replace(VARIABLE, (_tag, name: string) => {
    const v = Object.hasOwn(values, name) ? values[name] : undefined
    if (v === undefined || v === null) return ''
    return typeof v === 'string' ? v : JSON.stringify(v)
  })
}

export function render(template: string, partials: ReadonlyMap<string, string>, values: Readonly<Record<string, unknown>>): string {
  return substituteVariables(expandPartials(template, partials), values)
}
