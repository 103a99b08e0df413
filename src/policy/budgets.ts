// Budgets (PRODUCT §11): which budgets a request falls under, the largest cost it could have, the
// reservation before sending (a hold with a lease, renewed while the request runs) and its
// settlement to the real cost afterwards. Reference: docs/spend.md.

import { isGwResponse } from '../apis/responses/answer'
import { type ModelInfo, pricesFor } from '../catalog/catalog'
import { GatewayError } from '../errors'
import type { RawBody } from '../pipeline/context'
import type { ChatRequest } from '../providers/openai-types'
import type { Budget, BudgetPeriod, BudgetScope } from '../domain/org'
import type { LogStore } from '../store/types'
import type { BudgetCheck, BudgetLedger, LedgerHold } from './budget-ledger'

/** A request's hold on its budgets, released once by `settleBudgets`. */
export interface BudgetHold {
  hold: LedgerHold
  /** Renews the hold's lease while the request runs. */
  renewal: ReturnType<typeof setInterval>
}

/**
 * A hold's lease is the upstream timeout plus this: the longest a request waits without any sign of
 * life from its upstream, and time to settle after that. The request renews it every third of it.
 */
export const LEASE_MARGIN_MS = 5_000

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

/** What bounds a request's cost, read from its body before anything is sent. */
export interface CostBounds {
  /** Bytes of the largest form of the body that may reach a provider. */
  bytes: number
  images: number
  /** The request's own output limit per answer, when it sets one. */
  maxOutputTokens: number | undefined
  /** Answers asked for at once (`n`); each may use the whole output limit. */
  choices: number
  /** A field naming input the provider holds itself (a stored response, file, cache, prompt or tool), when there is one. */
  heldInput: string | undefined
}

/**
 * The most a request can cost on this model: every byte of the request as a prompt token (a token
 * is at least one byte), plus each image's allowance, at most the context window — the whole
 * context window when the provider adds input of its own — at the dearest input price; and the
 * output limit (the request's, else the model's) times the number of answers, at the dearer of the
 * output and reasoning prices. Null when the model has no known price.
 */
export function maxCostUsd(model: ModelInfo, b: CostBounds): number | null {
  const price = model.price
  if (!price) return null
  const prompt = b.heldInput !== undefined ? model.contextWindow : Math.min(b.bytes + b.images * TOKENS_PER_IMAGE, model.contextWindow)
  const p = pricesFor(price, prompt)
  const output = Math.min(b.maxOutputTokens ?? model.maxOutput, model.maxOutput) * b.choices
  return (prompt * Math.max(p.input, p.cacheWrite ?? 0) + output * Math.max(p.output, p.reasoning ?? 0)) / 1e6
}

/** Keys whose (non-empty) value is input the provider fetches or keeps: files, stored prompts, caches, conversations. */
const HELD_KEYS = new Set([
  'file_id',
  'file_url',
  'file_uri',
  'fileUri',
  'cached_content',
  'cachedContent',
  'conversation',
  'container',
  'mcp_servers',
  'vector_store_ids',
  'web_search_options',
])
/** `type`s of items, parts and tools whose content the provider supplies (references, its own tools). */
const HELD_TYPE = /^(item_reference|file_search|web_search|web_fetch|code_interpreter|code_execution|mcp)/
/** Values not descended into: JSON schemas and free-form maps, whose keys are the client's own names. */
const OPAQUE_KEYS = new Set(['parameters', 'schema', 'input_schema', 'json_schema', 'properties', 'metadata', 'output_schema', 'variables'])

/**
 * The first field of a body that makes the provider add input the request does not carry:
 * `previous_response_id` of a response gw did not build (gw's own are rebuilt from its log into the
 * body), a stored `prompt` object, a file by id or URL, a provider-side cache or conversation, or
 * one of the provider's own tools. Undefined when the body carries all of its input.
 */
export function heldInputOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const top = body as Record<string, unknown>
  const previous = top.previous_response_id
  if (typeof previous === 'string' && !isGwResponse(previous)) return 'previous_response_id'
  if (typeof top.prompt === 'object' && top.prompt !== null) return 'prompt'
  const stack: unknown[] = [body]
  while (stack.length) {
    const v = stack.pop()
    if (Array.isArray(v)) for (const x of v) stack.push(x)
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) {
        if (x === null || x === undefined || x === '' || (Array.isArray(x) && !x.length)) continue
        if (HELD_KEYS.has(k)) return k
        if (k === 'type' && typeof x === 'string' && HELD_TYPE.test(x)) return `type "${x.slice(0, 64)}"`
        // A document by URL (an image by URL is counted as an image).
        if (k === 'source' && (v as { type?: unknown }).type === 'document' && (x as { type?: unknown }).type === 'url') return 'source.url'
        if (!OPAQUE_KEYS.has(k)) stack.push(x)
      }
  }
  return undefined
}

/**
 * A request's cost bounds from gw's chat form of its body and the body as the client sent it (what a
 * pass-through sends: Responses, Messages): the larger of the two sizes, every image, `n`, held input.
 */
export function costBounds(body: ChatRequest, raw: RawBody | undefined, maxOutputTokens: number | undefined): CostBounds {
  let images = 0
  for (const m of body.messages) if (Array.isArray(m.content)) for (const p of m.content) if (p.type === 'image_url') images++
  return {
    bytes: Math.max(Buffer.byteLength(JSON.stringify(body)), raw?.bytes ?? 0),
    images,
    maxOutputTokens,
    choices: choicesOf(body, raw?.value),
    heldInput: heldInputOf(body) ?? heldInputOf(raw?.value),
  }
}

/** `n` as a count of answers (1 when absent or not a positive number). */
export function choicesOf(...bodies: unknown[]): number {
  let n = 1
  for (const b of bodies) {
    const v = typeof b === 'object' && b !== null ? (b as { n?: unknown }).n : undefined
    if (typeof v === 'number' && Number.isFinite(v) && v > n) n = Math.ceil(v)
  }
  return n
}

/** Dollars as people read them: cents from $1, two significant digits below (so $0.000015 is not $0.0000). */
const usd = (n: number) => `$${n >= 1 || n === 0 ? n.toFixed(2) : n < 1e-6 ? n.toFixed(8) : n.toPrecision(2)}`

/**
 * Reserves `amountUsd` on every applicable budget for `leaseMs`, renewed every third of it until
 * settled or until `signal` says the client left; 429 budget_exceeded when one cannot take it.
 */
export async function reserveBudgets(
  ledger: BudgetLedger,
  logs: LogStore,
  budgets: ScopedBudget[],
  orgId: string,
  amountUsd: number,
  leaseMs: number,
  now: number,
  signal?: AbortSignal,
): Promise<BudgetHold | undefined> {
  if (!budgets.length) return undefined
  const r = await ledger.reserve(
    budgets.map((b) => checkOf(logs, orgId, b)),
    amountUsd,
    leaseMs,
  )
  if (r.ok) {
    const { hold } = r
    const renewal = setInterval(() => {
      // A request whose client is gone renews no more: its hold lapses even if it is never settled.
      if (signal?.aborted) clearInterval(renewal)
      else void ledger.renew(hold)
    }, Math.max(1, Math.floor(leaseMs / 3)))
    renewal.unref?.()
    return { hold, renewal }
  }
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
  if (!hold) return
  clearInterval(hold.renewal)
  void ledger.settle(hold.hold, costUsd ?? 0)
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
