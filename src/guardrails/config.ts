// The checks of an org's guardrails that a schema cannot make (PRODUCT §19): each regex compiled by the
// linear-time engine (a pattern that would need backtracking is refused), names unique, `mask` only
// where there is a request to mask. A 400 naming the field; run when a policy is set.

import { RE2JS } from 're2js'
import { fieldError, problemMessage } from '../schemas/problems'
import type { Policy } from '../domain/org'

export type Guardrail = NonNullable<Policy['guardrails']>[number]

/** An org's pattern, compiled by RE2 (time linear in the text, whatever the pattern); throws a 400 naming the field. */
export function compilePattern(pattern: string, path: (string | number)[]): RE2JS {
  try {
    return RE2JS.compile(pattern)
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : 'not a regular expression'
    const problem = `not a pattern gw can run in linear time (${why}); backreferences and lookaround are not supported`
    throw fieldError(path, problemMessage({ field: `/${path.join('/')}`, message: problem }), problem)
  }
}

/** Throws a 400 for the first guardrail the schema let through that cannot run as written. */
export function checkGuardrails(guardrails: readonly Guardrail[] | undefined): void {
  const names = new Set<string>()
  guardrails?.forEach((g, i) => {
    if (names.has(g.name)) {
      const problem = `a guardrail named "${g.name}" is listed already`
      throw fieldError(['guardrails', i, 'name'], problemMessage({ field: `/guardrails/${i}/name`, message: problem }), problem)
    }
    names.add(g.name)
    if (g.kind !== 'webhook' && g.action === 'mask' && g.on === 'output') {
      const problem = 'mask keeps values away from the provider and restores them in the answer: "on" must be "input" or "both"'
      throw fieldError(['guardrails', i, 'on'], problemMessage({ field: `/guardrails/${i}/on`, message: problem }), problem)
    }
    if (g.kind === 'regex') g.patterns.forEach((p, j) => compilePattern(p, ['guardrails', i, 'patterns', j]))
  })
}
