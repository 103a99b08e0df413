// Budgets (PRODUCT §11): which budgets a request falls under, the largest cost it could have, the
// reservation before sending and its settlement to the real cost afterwards.

import { type ModelInfo, pricesFor } from '../catalog/catalog'
import { GatewayError } from '../errors'
import type { Budget, BudgetPeriod, BudgetScope, LogStore } from '../store/types'
import type { BudgetCheck, BudgetLedger } from './budget-ledger'

/** A request's hold on its budgets, released once by `settleBudgets`. */
export interface BudgetHold {
  keys: string[]
  reservedUsd: number
}

/** Who the request is, as the budget scopes see it. */
interface BudgetSubjects {
  orgId: string
  /** The service key's id; undefined for signed tokens and OIDC (no key budget applies). */
  keyId: string | undefined
  /** The entry's end-user id; undefined: endUser budgets do not apply. */
  endUserId: string | undefined
}

/** An image part may cost more tokens than its URL has bytes. */
const TOKENS_PER_IMAGE = 3000
const ROLLUP_DIM: Record<BudgetScope, string> = { org: '', key: 'key', endUser: 'endUser' }

interface Period {
  /** Part of the counter's key: the day, the month, or `total`. */
  id: string
  fromDay: string
  toDay: string
  /** Epoch ms when the period ends; null for `total`. */
  endsAt: number | null
}

function periodOf(period: BudgetPeriod, now: number): Period {
  const d = new Date(now)
  const day = d.toISOString().slice(0, 10)
  if (period === 'day') return { id: day, fromDay: day, toDay: day, endsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) }
  if (period === 'month') {
    const month = day.slice(0, 7)
    return { id: month, fromDay: `${month}-01`, toDay: `${month}-31`, endsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) }
  }
  return { id: 'total', fromDay: '0000-01-01', toDay: '9999-12-31', endsAt: null }
}

function subjectOf(scope: BudgetScope, s: BudgetSubjects): string | undefined {
  return scope === 'org' ? s.orgId : scope === 'key' ? s.keyId : s.endUserId
}

interface ScopedBudget {
  budget: Budget
  subject: string
  period: Period
  key: string
}

/** The budgets of a policy that apply to these subjects now, with their counter keys. */
export function applicableBudgets(budgets: readonly Budget[], s: BudgetSubjects, now: number): ScopedBudget[] {
  const out: ScopedBudget[] = []
  for (const budget of budgets) {
    const subject = subjectOf(budget.scope, s)
    if (subject === undefined) continue
    const period = periodOf(budget.period, now)
    out.push({ budget, subject, period, key: `budget:${s.orgId}:${budget.scope}:${subject}:${budget.period}:${period.id}` })
  }
  return out
}

function checkOf(logs: LogStore, orgId: string, b: ScopedBudget): BudgetCheck {
  const dim = ROLLUP_DIM[b.budget.scope]
  return {
    key: b.key,
    limitUsd: b.budget.usd,
    loadSpent: () => logs.spend({ orgId, dim, value: dim === '' ? '' : b.subject, fromDay: b.period.fromDay, toDay: b.period.toDay }),
  }
}

/**
 * The most a request can cost on this model: every byte of the request as a prompt token (a token
 * is at least one byte), plus each image's allowance, at most the context window, at the dearest
 * input price; and the output limit (the request's, else the model's) at the dearer of the output
 * and reasoning prices. Null when the model has no known price.
 */
export function maxCostUsd(model: ModelInfo, requestBytes: number, images: number, maxOutputTokens: number | undefined): number | null {
  const price = model.price
  if (!price) return null
  const prompt = Math.min(requestBytes + images * TOKENS_PER_IMAGE, model.contextWindow)
  const p = pricesFor(price, prompt)
  const output = Math.min(maxOutputTokens ?? model.maxOutput, model.maxOutput)
  return (prompt * Math.max(p.input, p.cacheWrite ?? 0) + output * Math.max(p.output, p.reasoning ?? 0)) / 1e6
}

/** Dollars as people read them: cents from $1, two significant digits below (so $0.000015 is not $0.0000). */
const usd = (n: number) => `$${n >= 1 || n === 0 ? n.toFixed(2) : n < 1e-6 ? n.toFixed(8) : n.toPrecision(2)}`

/** Reserves `amountUsd` on every applicable budget; 429 budget_exceeded when one cannot take it. */
export async function reserveBudgets(
  ledger: BudgetLedger,
  logs: LogStore,
  budgets: ScopedBudget[],
  orgId: string,
  amountUsd: number,
  now: number,
): Promise<BudgetHold | undefined> {
  if (!budgets.length) return undefined
  const r = await ledger.reserve(
    budgets.map((b) => checkOf(logs, orgId, b)),
    amountUsd,
  )
  if (r.ok) return { keys: budgets.map((b) => b.key), reservedUsd: amountUsd }
  const b = budgets.find((x) => x.key === r.key) as ScopedBudget
  const who = b.budget.scope === 'org' ? `org "${orgId}"` : b.budget.scope === 'key' ? 'this service key' : `end user "${b.subject.slice(0, 64)}"`
  const per = b.budget.period === 'total' ? 'in total' : `per ${b.budget.period} (UTC)`
  const retry = b.period.endsAt === null ? undefined : Math.max(1, Math.ceil((b.period.endsAt - now) / 1000))
  throw new GatewayError(
    429,
    'budget_exceeded',
    `Budget exceeded for ${who}: ${usd(b.budget.usd)} ${per}; spent ${usd(r.spentUsd)}, reserved ${usd(r.reservedUsd)}, this request may cost up to ${usd(amountUsd)}` +
      (retry === undefined ? '' : `; resets in ${retry} s`),
    retry === undefined ? {} : { headers: { 'retry-after': String(retry) } },
  )
}

/** Replaces the hold by the request's real cost (null: unknown, counted as 0). */
export function settleBudgets(ledger: BudgetLedger, hold: BudgetHold | undefined, costUsd: number | null): void {
  if (hold) void ledger.settle(hold.keys, hold.reservedUsd, costUsd ?? 0)
}

/** GET /admin/orgs/:org/budgets: each budget with its spend in the current period. */
export interface BudgetStatus {
  scope: BudgetScope
  subject?: string
  period: BudgetPeriod
  usd: number
  spentUsd: number
  reservedUsd: number
  remainingUsd: number
  resetsAt: string | null
}

export async function budgetStatus(
  ledger: BudgetLedger,
  logs: LogStore,
  orgId: string,
  budgets: readonly Budget[],
  subjectsOf: (scope: Exclude<BudgetScope, 'org'>, period: Period) => Promise<string[]>,
  now: number,
): Promise<BudgetStatus[]> {
  const out: BudgetStatus[] = []
  for (const budget of budgets) {
    const period = periodOf(budget.period, now)
    const { scope } = budget
    const subjects = scope === 'org' ? [orgId] : await subjectsOf(scope, period)
    for (const subject of subjects) {
      const [scoped] = applicableBudgets([budget], { orgId, keyId: subject, endUserId: subject }, now) as [ScopedBudget]
      const state = (await ledger.state(scoped.key)) ?? { spentUsd: await checkOf(logs, orgId, scoped).loadSpent(), reservedUsd: 0 }
      const round = (n: number) => Math.round(n * 1e9) / 1e9
      out.push({
        scope: budget.scope,
        ...(budget.scope === 'org' ? {} : { subject }),
        period: budget.period,
        usd: budget.usd,
        spentUsd: round(state.spentUsd),
        reservedUsd: round(state.reservedUsd),
        remainingUsd: round(budget.usd - state.spentUsd - state.reservedUsd),
        resetsAt: period.endsAt === null ? null : new Date(period.endsAt).toISOString(),
      })
    }
  }
  return out
}
