// Whether an org may use a model: provider enabled and keyed, model inside the allowed globs.

import { echo } from '../errors'
import type { ModelRef, OrgContext } from '../pipeline/context'

/** Compiled globs: patterns come from org policies, so they are compiled once, not on every request. */
const compiled = new Map<string, RegExp>()
const MAX_COMPILED = 1000

/** `*` matches any run of characters; everything else literally. */
export function globMatch(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value
  let re = compiled.get(pattern)
  if (!re) {
    re = new RegExp(`^${pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
    if (compiled.size >= MAX_COMPILED) compiled.clear()
    compiled.set(pattern, re)
  }
  return re.test(value)
}

/** Undefined when usable; otherwise the reason it is not. */
export function modelUnavailable(org: OrgContext, ref: Pick<ModelRef, 'provider' | 'name'>): string | undefined {
  const { policy } = org.org
  if (policy.disabledProviders?.some((p) => p.toLowerCase() === ref.provider || (p === 'gemini' && ref.provider === 'google')))
    return `provider "${ref.provider}" is disabled for org "${org.org.id}"`
  if (policy.allowedModels && !policy.allowedModels.some((g) => globMatch(g, ref.name)))
    return `model ${echo(ref.name)} is not in the allowed models of org "${org.org.id}"`
  const keys = org.providers.get(ref.provider)
  // An OpenAI-compatible provider may need no key (a local server): its record is what makes it usable.
  if (keys?.some((k) => k.compat || k.bedrock)) return keys.some((k) => k.enabled) ? undefined : `provider "${ref.provider}" is disabled for org "${org.org.id}"`
  if (!keys?.length) return `no ${ref.provider} API key is configured for org "${org.org.id}"`
  if (!keys.some((k) => k.enabled)) return `provider "${ref.provider}" is disabled for org "${org.org.id}"`
  return undefined
}
