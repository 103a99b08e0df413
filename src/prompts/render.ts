// Renders prompt templates: `{{> partial}}` expanded first (nested, cycle- and depth-checked), then `{{variable}}`.

import { badRequest } from '../errors'

export const MAX_PARTIAL_DEPTH = 8
/** A rendered prompt larger than this is refused (400), like a body over GW_MAX_BODY_BYTES' default: rendering stays bounded in work. */
export const MAX_RENDERED_CHARS = 10 * 1024 * 1024
const PARTIAL = /\{\{>\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*\}\}/g
const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g

const tooLarge = () => badRequest(`The rendered prompt would be larger than ${MAX_RENDERED_CHARS} characters`)

/** Replaces partial tags by their templates, recursively; a missing partial is an empty string. */
export function expandPartials(template: string, partials: ReadonlyMap<string, string>, trail: readonly string[] = []): string {
  let size = template.length
  return template.replace(PARTIAL, (tag, name: string) => {
    if (trail.includes(name)) throw badRequest(`Partials form a cycle: ${[...trail, name].join(' → ')}`)
    if (trail.length >= MAX_PARTIAL_DEPTH)
      throw badRequest(`Partials nested deeper than ${MAX_PARTIAL_DEPTH} levels: ${[...trail, name].join(' → ')}`)
    const body = partials.get(name)
    const out = body === undefined ? '' : expandPartials(body, partials, [...trail, name])
    // Partials that repeat partials grow exponentially with depth: the size is checked at every level.
    size += out.length - tag.length
    if (size > MAX_RENDERED_CHARS) throw tooLarge()
    return out
  })
}

/** Inserts values as they are (no HTML escaping); non-strings as compact JSON; unknown names as ''. One pass: values are never re-scanned. */
export function substituteVariables(template: string, values: Readonly<Record<string, unknown>>): string {
  let size = template.length
  return template.replace(VARIABLE, (tag, name: string) => {
    const v = Object.hasOwn(values, name) ? values[name] : undefined
    const out = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)
    // A large value in a template that repeats its tag would multiply: checked before the string is built.
    size += out.length - tag.length
    if (size > MAX_RENDERED_CHARS) throw tooLarge()
    return out
  })
}

export function render(template: string, partials: ReadonlyMap<string, string>, values: Readonly<Record<string, unknown>>): string {
  return substituteVariables(expandPartials(template, partials), values)
}
