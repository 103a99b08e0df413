// Routes (PRODUCT §13): an org's own model name resolved to one of its targets — by weight, or by
// the lowest recent latency — among the targets whose cool-down and breaker let requests through.

import type { Route } from '../domain/org'
import { parseFallbackChain, parseModelRef } from './chat-input'
import { modelUnavailable } from '../policy/model-access'
import type { FallbackEntry, ModelRef, OrgContext } from './context'
import type { UpstreamHealth } from './upstream-health'

export interface RouteChoice {
  route: string
  model: ModelRef
  /** The route's fallback entries, tried after the chosen target. */
  fallback: FallbackEntry[]
}

/** How far back a latency still counts; older figures are treated as unknown. */
const WINDOW_MS = 5 * 60_000
const MAX_TRACKED = 10_000

/** Recent latency per org and model: an exponentially weighted mean of successful attempts. */
export class RecentLatency {
  /** By org, then model, each org's at most MAX_TRACKED (no key string or object made per observation: every answered request makes one). */
  private readonly means = new Map<string, Map<string, { ms: number; at: number }>>()

  constructor(private readonly now: () => number = Date.now) {}

  observe(orgId: string, model: string, ms: number): void {
    let byModel = this.means.get(orgId)
    if (!byModel) this.means.set(orgId, (byModel = new Map()))
    const now = this.now()
    const prev = byModel.get(model)
    if (prev) {
      prev.ms = now - prev.at < WINDOW_MS ? prev.ms * 0.8 + ms * 0.2 : ms
      prev.at = now
      return
    }
    if (byModel.size >= MAX_TRACKED) byModel.delete(byModel.keys().next().value as string)
    byModel.set(model, { ms, at: now })
  }

  /** Milliseconds, or undefined when nothing recent is known. */
  of(orgId: string, model: string): number | undefined {
    const m = this.means.get(orgId)?.get(model)
    return m && this.now() - m.at < WINDOW_MS ? m.ms : undefined
  }
}

function weighted<T extends { weight: number }>(items: T[], random: () => number): T {
  const total = items.reduce((n, x) => n + x.weight, 0)
  let r = random() * total
  for (const x of items) if ((r -= x.weight) < 0) return x
  return items[items.length - 1] as T
}

/**
 * Picks the target of a route. Targets the org cannot use (no key for the provider, not allowed)
 * are never drawn while another can be; among the usable ones, only those whose breaker and
 * cool-down admit requests are candidates (all usable ones when none does: the attempt then fails
 * and falls back as usual).
 * `lowest-latency` takes the target with the lowest recent latency, an unmeasured one first (so
 * every target gets measured), ties by weight.
 */
export function chooseRoute(
  route: Route,
  org: OrgContext,
  health: UpstreamHealth,
  latency: RecentLatency,
  random: () => number = Math.random,
): RouteChoice {
  const orgId = org.org.id
  const all = route.targets.map((t) => ({ ...t, ref: parseModelRef(t.model, ['route target']) }))
  const usable = all.filter((t) => modelUnavailable(org, t.ref) === undefined)
  const targets = usable.length ? usable : all
  const healthy = targets.filter((t) => health.available(orgId, t.ref.name))
  let pool = healthy.length ? healthy : targets
  if (route.strategy === 'lowest-latency') {
    const ms = (t: (typeof pool)[number]) => latency.of(orgId, t.ref.name) ?? -1
    const best = Math.min(...pool.map(ms))
    pool = pool.filter((t) => ms(t) === best)
  }
  return { route: route.name, model: weighted(pool, random).ref, fallback: parseFallbackChain(route.fallback, 'fallback') }
}
