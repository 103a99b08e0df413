// Daily usage roll-ups (PRODUCT §11): what one log entry adds to each report group, and the report's
// shape. Store-agnostic: each store keeps the rows its own way and sums them on request.

import type { LogEntry } from '../domain/log-entry'

/** Report groups. `metadata.<key>` groups by one metadata key's values. */
export type UsageGroupBy = 'day' | 'model' | 'provider' | 'key' | 'endUser' | `metadata.${string}`

/** Disjoint token kinds (the same split as the cost). */
export interface UsageTokens {
  input: number
  cachedInput: number
  cacheWrite: number
  output: number
  reasoning: number
}

export interface UsageTotals {
  requests: number
  errors: number
  tokens: UsageTokens
  /** Sum of the known costs; null when no request of the group had a known price. */
  costUsd: number | null
}

export interface UsageRow extends UsageTotals {
  /** The group's value: a day `YYYY-MM-DD`, a model, a provider, a service-key id, an end-user id, a metadata value; null for requests without one. */
  key: string | null
}

export interface UsageQuery {
  orgId: string
  groupBy: UsageGroupBy
  /** Inclusive, `YYYY-MM-DD` (UTC). */
  fromDay: string
  /** Inclusive, `YYYY-MM-DD` (UTC). */
  toDay: string
}

/** One roll-up cell: an org's day, a dimension ('' for the whole day) and that dimension's value ('' for none). */
export interface RollupCell extends Omit<UsageTotals, 'costUsd'> {
  orgId: string
  day: string
  dim: string
  value: string
  costUsd: number
  /** Requests whose cost was known (so a group of unpriced requests reports null, not 0). */
  priced: number
}

export const dayOf = (iso: string): string => iso.slice(0, 10)

/**
 * Distinct values of one metadata key rolled up per org and day; past it, new values are summed
 * under OTHER_VALUE, so high-cardinality metadata (trace ids, say) cannot grow the roll-ups without bound.
 */
export const MAX_METADATA_VALUES = 1000
export const OTHER_VALUE = '(other)'

/** Dimensions stored per entry; `metadata.<key>` for each metadata key. */
function cellsOf(e: LogEntry): [dim: string, value: string][] {
  const cells: [string, string][] = [
    ['', ''],
    ['model', e.model ?? e.requestedModel ?? ''],
    ['provider', e.provider ?? ''],
    // A service key is its id; signed tokens and OIDC callers have no key and group by auth mode.
    ['key', e.authMode === 'GwKey' ? (e.subject ?? '') : (e.authMode ?? '')],
    ['endUser', e.endUserId ?? ''],
  ]
  for (const [k, v] of Object.entries(e.metadata)) cells.push([`metadata.${k}`, String(v)])
  return cells
}

/** Adds cell `b`'s sums to cell `a`. */
export function addCell(a: RollupCell, b: RollupCell): void {
  a.requests += b.requests
  a.errors += b.errors
  a.tokens.input += b.tokens.input
  a.tokens.cachedInput += b.tokens.cachedInput
  a.tokens.cacheWrite += b.tokens.cacheWrite
  a.tokens.output += b.tokens.output
  a.tokens.reasoning += b.tokens.reasoning
  a.costUsd += b.costUsd
  a.priced += b.priced
}

/** Sums a batch of entries into roll-up cells (one per org/day/dimension/value). */
export function rollup(entries: Iterable<LogEntry>): RollupCell[] {
  const cells = new Map<string, RollupCell>()
  for (const e of entries) {
    const day = dayOf(e.createdAt)
    const u = e.usage
    const cached = u.cachedTokens
    const written = u.cacheWriteTokens
    const reasoning = Math.min(u.reasoningTokens, u.completionTokens)
    for (const [dim, value] of cellsOf(e)) {
      const id = `${e.orgId}\u0000${day}\u0000${dim}\u0000${value}`
      let c = cells.get(id)
      if (!c) {
        c = {
          orgId: e.orgId,
          day,
          dim,
          value,
          requests: 0,
          errors: 0,
          tokens: { input: 0, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 },
          costUsd: 0,
          priced: 0,
        }
        cells.set(id, c)
      }
      c.requests++
      if (e.status >= 400) c.errors++
      c.tokens.input += Math.max(0, u.promptTokens - cached - written)
      c.tokens.cachedInput += cached
      c.tokens.cacheWrite += written
      c.tokens.output += u.completionTokens - reasoning
      c.tokens.reasoning += reasoning
      if (e.costUsd !== null) {
        c.costUsd += e.costUsd
        c.priced++
      }
    }
  }
  return [...cells.values()]
}

/**
 * A metadata report's group of requests without that key (`key: null`): the whole org's totals over
 * the same days minus the groups found. Only metadata keys present are rolled up, so this group is
 * the difference. Nothing is added when every request had the key.
 */
export function withUngrouped(rows: UsageRow[], totals: UsageRow[]): UsageRow[] {
  const sum = (xs: UsageRow[], f: (r: UsageRow) => number) => xs.reduce((n, r) => n + f(r), 0)
  const requests = sum(totals, (r) => r.requests) - sum(rows, (r) => r.requests)
  if (requests <= 0) return rows
  const left = (k: keyof UsageTokens) => sum(totals, (r) => r.tokens[k]) - sum(rows, (r) => r.tokens[k])
  const tokens: UsageTokens = { input: left('input'), cachedInput: left('cachedInput'), cacheWrite: left('cacheWrite'), output: left('output'), reasoning: left('reasoning') }
  const priced = totals.some((r) => r.costUsd !== null)
  const cost = sum(totals, (r) => r.costUsd ?? 0) - sum(rows, (r) => r.costUsd ?? 0)
  return [
    ...rows,
    {
      key: null,
      requests,
      errors: sum(totals, (r) => r.errors) - sum(rows, (r) => r.errors),
      tokens,
      costUsd: priced ? Math.round(Math.max(0, cost) * 1e9) / 1e9 : null,
    },
  ]
}

/** The roll-up dimension a report group reads, and whether its rows are keyed by day. */
export function dimensionOf(groupBy: UsageGroupBy): { dim: string; byDay: boolean } {
  return groupBy === 'day' ? { dim: '', byDay: true } : { dim: groupBy, byDay: false }
}
