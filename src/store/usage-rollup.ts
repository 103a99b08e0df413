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

/** A group as the store sums it: a report's row and how many of its requests had a known price. */
export interface UsageSum extends UsageRow {
  priced: number
}

/** The report's row of a store's sum. */
export const reportRow = ({ priced: _priced, ...row }: UsageSum): UsageRow => row

/** A store's key of a group: '' is "none" for the fixed dimensions, but a metadata value may be the empty string itself. */
export const groupKey = (dim: string, value: string): string | null => (value === '' && !dim.startsWith('metadata.') ? null : value)

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

/** What one entry adds to each of its cells. */
interface EntryFigures {
  failed: number
  input: number
  cachedInput: number
  cacheWrite: number
  output: number
  reasoning: number
  costUsd: number | null
}

/** A dimension's cells in one org's day, by value. */
interface DimCells {
  dim: string
  byValue: Map<string, RollupCell>
}

const dimCells = (dim: string): DimCells => ({ dim, byValue: new Map() })

/** One org's day of cells: the dimensions of every entry (see rollup), the metadata ones by key. */
interface DayCells {
  orgId: string
  day: string
  fixed: [whole: DimCells, model: DimCells, provider: DimCells, key: DimCells, endUser: DimCells]
  metadata: Map<string, DimCells>
}

function dayCells(orgId: string, day: string): DayCells {
  return { orgId, day, fixed: [dimCells(''), dimCells('model'), dimCells('provider'), dimCells('key'), dimCells('endUser')], metadata: new Map() }
}

/** Adds an entry's figures to its cell of `d` = `value` (made on first sight). */
function addTo(day: DayCells, d: DimCells, value: string, f: EntryFigures): void {
  let c = d.byValue.get(value)
  if (!c) {
    c = { orgId: day.orgId, day: day.day, dim: d.dim, value, requests: 0, errors: 0, tokens: { input: 0, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 }, costUsd: 0, priced: 0 }
    d.byValue.set(value, c)
  }
  c.requests++
  c.errors += f.failed
  c.tokens.input += f.input
  c.tokens.cachedInput += f.cachedInput
  c.tokens.cacheWrite += f.cacheWrite
  c.tokens.output += f.output
  c.tokens.reasoning += f.reasoning
  if (f.costUsd !== null) {
    c.costUsd += f.costUsd
    c.priced++
  }
}

/** `map`'s value at `key`, made by `make` on first sight. */
function at<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key)
  if (v === undefined) map.set(key, (v = make()))
  return v
}

/**
 * Sums a batch of entries into roll-up cells (one per org/day/dimension/value). The dimensions of an
 * entry: '' (the whole day), model, provider, key (a service key is its id; signed tokens and OIDC
 * callers have no key and group by auth mode), endUser, and `metadata.<key>` for each metadata key.
 * Cells are found through the values themselves (nested maps), not by a string built per dimension.
 */
export function rollup(entries: Iterable<LogEntry>): RollupCell[] {
  const days = new Map<string, Map<string, DayCells>>()
  for (const e of entries) {
    const u = e.usage
    const reasoning = Math.min(u.reasoningTokens, u.completionTokens)
    const f: EntryFigures = {
      failed: e.status >= 400 ? 1 : 0,
      input: Math.max(0, u.promptTokens - u.cachedTokens - u.cacheWriteTokens),
      cachedInput: u.cachedTokens,
      cacheWrite: u.cacheWriteTokens,
      output: u.completionTokens - reasoning,
      reasoning,
      costUsd: e.costUsd,
    }
    const orgId = e.orgId
    const dayKey = dayOf(e.createdAt)
    const day = at(at(days, orgId, () => new Map<string, DayCells>()), dayKey, () => dayCells(orgId, dayKey))
    const [whole, model, provider, key, endUser] = day.fixed
    addTo(day, whole, '', f)
    addTo(day, model, e.model ?? e.requestedModel ?? '', f)
    addTo(day, provider, e.provider ?? '', f)
    addTo(day, key, e.authMode === 'GwKey' ? (e.subject ?? '') : (e.authMode ?? ''), f)
    addTo(day, endUser, e.endUserId ?? '', f)
    for (const k in e.metadata) addTo(day, at(day.metadata, k, () => dimCells(`metadata.${k}`)), String(e.metadata[k]), f)
  }
  const cells: RollupCell[] = []
  for (const org of days.values())
    for (const day of org.values()) for (const d of [...day.fixed, ...day.metadata.values()]) cells.push(...d.byValue.values())
  return cells
}

/**
 * A metadata report's group of requests without that key (`key: null`): the whole org's totals over
 * the same days minus the groups found. Only metadata keys present are rolled up, so this group is
 * the difference. Nothing is added when every request had the key.
 */
export function withUngrouped(rows: UsageSum[], totals: UsageSum[]): UsageRow[] {
  const sum = (xs: UsageSum[], f: (r: UsageSum) => number) => xs.reduce((n, r) => n + f(r), 0)
  const requests = sum(totals, (r) => r.requests) - sum(rows, (r) => r.requests)
  if (requests <= 0) return rows.map(reportRow)
  const left = (k: keyof UsageTokens) => sum(totals, (r) => r.tokens[k]) - sum(rows, (r) => r.tokens[k])
  const tokens: UsageTokens = { input: left('input'), cachedInput: left('cachedInput'), cacheWrite: left('cacheWrite'), output: left('output'), reasoning: left('reasoning') }
  // Priced when some of the group's own requests had a known price (never 0 for requests of unknown price).
  const priced = sum(totals, (r) => r.priced) - sum(rows, (r) => r.priced) > 0
  const cost = sum(totals, (r) => r.costUsd ?? 0) - sum(rows, (r) => r.costUsd ?? 0)
  return [
    ...rows.map(reportRow),
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
