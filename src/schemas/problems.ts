// What is wrong with a checked value, field by field: `{ field, message }` problems, the field as a JSON Pointer.

import { badRequest, type GatewayError } from '../errors'

/**
 * One problem of a checked value. `field` is a JSON Pointer (RFC 6901) into the value: `/budgets/0/period`,
 * `/targets/1/model`; `""` is the value as a whole. `message` says what is wrong with that field
 * (`expected one of "day", "month", "total"`), or is `MISSING` for a required field that is absent.
 */
export interface Problem {
  field: string
  message: string
}

/** The message of a required field that is absent. */
export const MISSING = 'required'

/** Problems one check reports at most (the first ones, in the schema's order); the 400 names the first. */
export const MAX_PROBLEMS = 10

/** A field as path segments: object keys and array indexes. */
export type FieldPath = readonly (string | number)[]

/** `['budgets', 0, 'period']` → `/budgets/0/period`. */
export function pointer(path: FieldPath): string {
  return path.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}

/** `/budgets/0/period` → `['budgets', 0, 'period']` (segments of digits read as array indexes). */
export function pathOf(field: string): (string | number)[] {
  if (!field) return []
  return field
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s))
}

/** `['targets', 0, 'model']` → `targets[0].model`, as the admin checks' messages name fields. */
export function dotted(path: FieldPath): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i ? `.${s}` : s)).join('')
}

/**
 * The 400 a check throws for one field: `message` is what the client reads, the problem (the field's
 * pointer and `problem`, what is wrong with it) what a caller placing it reads (the config file).
 */
export function fieldError(path: FieldPath, message: string, problem: string = message): GatewayError {
  return badRequest(message, { problems: [{ field: pointer(path), message: problem }] })
}

/** The 400's message for a check's first problem, worded as gw always has: `Invalid field "messages/0/role": …`. */
export function problemMessage(p: Problem): string {
  const name = p.field.slice(1) || 'body'
  return p.message === MISSING ? `Missing required field "${name}"` : `Invalid field "${name}": ${p.message}`
}
