// The BudgetLedger shared by every instance: per budget a Redis hash of spent and reserved USD and a
// sorted set of the holds behind `reserved`, scored by when their lease runs out; reserved for all of
// a request's budgets by one Lua script, which first lets lapsed holds go (docs/spend.md).

import { GatewayError } from '../errors'
import { type BudgetCheck, type BudgetLedger, type BudgetState, type LedgerHold, MemoryBudgetLedger, type Reservation } from '../policy/budget-ledger'
import { luaScript, type RedisCountersOptions, RedisUnavailableError, type RedisLink } from './redis-link'

/** A budget unused this long leaves Redis; its spend is read again from the store's roll-ups. */
const TTL_MS = 6 * 3600_000
/** Settlements that met Redis away, kept to be made once it is back; past this many the oldest are dropped. */
const MAX_PENDING_SETTLEMENTS = 10_000

// Shared by the scripts: Redis's own clock (one clock for every instance), and the release of the
// holds of one budget whose lease has run out. A hold is the member `<id>:<amount>`.
const LAPSE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function release(key, holds, amount)
  if redis.call('ZCARD', holds) == 0 then
    redis.call('HSET', key, 'reserved', '0')
  elseif tonumber(redis.call('HINCRBYFLOAT', key, 'reserved', -amount)) < 0 then
    redis.call('HSET', key, 'reserved', '0')
  end
end
local function lapse(key, holds)
  local gone = redis.call('ZRANGEBYSCORE', holds, '-inf', now)
  if #gone == 0 then return end
  redis.call('ZREMRANGEBYSCORE', holds, '-inf', now)
  local sum = 0
  for _, m in ipairs(gone) do sum = sum + tonumber(string.match(m, '[^:]+$')) end
  release(key, holds, sum)
end
`

/**
 * KEYS: per budget its hash, then its holds. ARGV: amount, hold member, lease ms, then each budget's
 * limit. A budget not in Redis yet answers {-1, index} (the caller loads its spend from the store and
 * tries again). Otherwise, only when the amount fits under every budget, holds it on all: {0}; else
 * {index, spent, reserved}.
 */
const RESERVE = luaScript(`${LAPSE}
local amount = tonumber(ARGV[1])
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[2 * i - 1]) == 0 then return { -1, i } end
end
for i = 1, n do
  local key = KEYS[2 * i - 1]
  lapse(key, KEYS[2 * i])
  local spent = tonumber(redis.call('HGET', key, 'spent') or '0')
  local reserved = tonumber(redis.call('HGET', key, 'reserved') or '0')
  if spent + reserved + amount > tonumber(ARGV[i + 3]) then return { i, tostring(spent), tostring(reserved) } end
end
for i = 1, n do
  local key, holds = KEYS[2 * i - 1], KEYS[2 * i]
  redis.call('HINCRBYFLOAT', key, 'reserved', amount)
  redis.call('ZADD', holds, now + tonumber(ARGV[3]), ARGV[2])
  redis.call('PEXPIRE', key, ${TTL_MS})
  redis.call('PEXPIRE', holds, ${TTL_MS})
end
return { 0 }
`)

/** KEYS as RESERVE. ARGV: hold member, lease ms. Moves a live hold's lease end; a lapsed one is not brought back. */
const RENEW = luaScript(`${LAPSE}
for i = 1, #KEYS / 2 do
  lapse(KEYS[2 * i - 1], KEYS[2 * i])
  redis.call('ZADD', KEYS[2 * i], 'XX', now + tonumber(ARGV[2]), ARGV[1])
end
return 1
`)

/** KEYS as RESERVE. ARGV: hold member, amount, actual. Gives the hold back (if still held) and adds the real cost. */
const SETTLE = luaScript(`${LAPSE}
for i = 1, #KEYS / 2 do
  local key, holds = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('EXISTS', key) == 1 then
    if redis.call('ZREM', holds, ARGV[1]) == 1 then release(key, holds, tonumber(ARGV[2])) end
    redis.call('HINCRBYFLOAT', key, 'spent', tonumber(ARGV[3]))
  end
end
return 1
`)

/** KEYS: one budget's hash and holds. Its spent and reserved once lapsed holds are gone; nil when not in Redis. */
const STATE = luaScript(`${LAPSE}
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
lapse(KEYS[1], KEYS[2])
return redis.call('HMGET', KEYS[1], 'spent', 'reserved')
`)

export class RedisBudgetLedger implements BudgetLedger {
  private readonly loading = new Map<string, Promise<void>>()
  /** Settlements made while Redis was away, in order. */
  private pending: { hold: LedgerHold; actualUsd: number }[] = []
  private flushing: Promise<void> | undefined
  /**
   * This instance's own counters while Redis is away (GW_REDIS_REQUIRED=false, PRODUCT §10), loaded
   * from the store's roll-ups; a fresh one for each outage, as the spend of the other instances
   * meanwhile is in Redis and the roll-ups, not here.
   */
  private local = new MemoryBudgetLedger()
  /** The holds made on an outage's own counters, and those counters. */
  private readonly localHolds = new WeakMap<LedgerHold, MemoryBudgetLedger>()

  constructor(
    private readonly link: RedisLink,
    private readonly opts: RedisCountersOptions,
  ) {
    link.onReconnect(() => {
      this.local = new MemoryBudgetLedger()
      void this.flush().catch(() => {})
    })
  }

  /** Each budget's hash and holds, in the order the scripts take them. */
  private keys(budgets: readonly string[]): string[] {
    const prefix = this.opts.prefix ?? 'gw:budget:'
    return budgets.flatMap((k) => [`${prefix}${k}`, `${prefix}${k}:holds`])
  }

  /**
   * While Redis is away: with GW_REDIS_REQUIRED a budgeted request is refused (503, `Retry-After: 1`);
   * without it the reservation is made on this instance's own counters, so each instance may spend
   * what a budget has left until Redis is back (docs/scaling.md).
   */
  async reserve(checks: readonly BudgetCheck[], amountUsd: number, leaseMs: number): Promise<Reservation> {
    const hold: LedgerHold = { id: Bun.randomUUIDv7(), keys: checks.map((c) => c.key), amountUsd, leaseMs }
    const args = [String(amountUsd), member(hold), String(leaseMs), ...checks.map((c) => String(c.limitUsd))]
    try {
      await this.flush()
      for (let attempt = 0; attempt < 3; attempt++) {
        const r = (await this.link.eval(RESERVE, this.keys(hold.keys), args)) as [number, number | string, string?]
        if (r[0] === 0) return { ok: true, hold }
        if (r[0] > 0) {
          const check = checks[r[0] - 1] as BudgetCheck
          return { ok: false, key: check.key, spentUsd: Number(r[1]), reservedUsd: Number(r[2]) }
        }
        // Not in Redis yet: the store's roll-ups say what the period has spent; the first instance to write it wins.
        await this.load(checks[Number(r[1]) - 1] as BudgetCheck)
      }
      throw new Error('budget counters kept disappearing from Redis')
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) throw err
      if (this.opts.required)
        throw new GatewayError(503, 'gateway_error', 'Budgets cannot be checked: the shared counter store (Redis) is unreachable', {
          headers: { 'retry-after': '1' },
        })
      const local = this.local
      const r = await local.reserve(checks, amountUsd, leaseMs)
      if (r.ok) this.localHolds.set(r.hold, local)
      return r
    }
  }

  /** Puts a budget's stored spend into Redis; concurrent requests of this instance share one reading. */
  private load(c: BudgetCheck): Promise<void> {
    let p = this.loading.get(c.key)
    if (!p) {
      p = (async () => {
        try {
          const spent = await c.loadSpent()
          const [key] = this.keys([c.key]) as [string]
          await this.link.send('HSETNX', [key, 'spent', String(spent)])
          await this.link.send('PEXPIRE', [key, String(TTL_MS)])
        } finally {
          this.loading.delete(c.key)
        }
      })()
      this.loading.set(c.key, p)
    }
    return p
  }

  async renew(hold: LedgerHold): Promise<void> {
    const local = this.localHolds.get(hold)
    if (local) return local.renew(hold)
    try {
      await this.link.eval(RENEW, this.keys(hold.keys), [member(hold), String(hold.leaseMs)])
    } catch (err) {
      // Redis away: the hold may lapse meanwhile; no new reservation can be made until it is back.
      if (!(err instanceof RedisUnavailableError)) console.error('gw: renewing a budget reservation failed:', err instanceof Error ? err.message : err)
    }
  }

  /** A hold made on an outage's own counters is given back there; its cost goes to Redis too (now, or once it is back). */
  async settle(hold: LedgerHold, actualUsd: number): Promise<void> {
    await this.localHolds.get(hold)?.settle(hold, actualUsd)
    try {
      await this.flush()
      await this.settleNow(hold, actualUsd)
    } catch (err) {
      // Called after the answer was sent: a settlement that cannot be made now is kept for later, never thrown.
      if (err instanceof RedisUnavailableError) {
        if (this.pending.length >= MAX_PENDING_SETTLEMENTS) this.pending.shift()
        this.pending.push({ hold, actualUsd })
      } else console.error('gw: settling a budget reservation failed:', err instanceof Error ? err.message : err)
    }
  }

  private settleNow(hold: LedgerHold, actualUsd: number): Promise<unknown> {
    return this.link.eval(SETTLE, this.keys(hold.keys), [member(hold), String(hold.amountUsd), String(actualUsd)])
  }

  /** Makes the settlements kept while Redis was away, oldest first (before any new reservation of this instance). */
  private flush(): Promise<void> {
    if (!this.pending.length) return Promise.resolve()
    this.flushing ??= (async () => {
      try {
        while (this.pending.length) {
          const next = this.pending[0] as (typeof this.pending)[number]
          try {
            await this.settleNow(next.hold, next.actualUsd)
          } catch (err) {
            if (err instanceof RedisUnavailableError) throw err
            console.error('gw: settling a budget reservation failed:', err instanceof Error ? err.message : err)
          }
          this.pending.shift()
        }
      } finally {
        this.flushing = undefined
      }
    })()
    return this.flushing
  }

  async state(key: string): Promise<BudgetState | undefined> {
    try {
      const r = (await this.link.eval(STATE, this.keys([key]), [])) as [string | null, string | null] | null
      if (!r || r[0] === null) return undefined
      return { spentUsd: Number(r[0]), reservedUsd: Number(r[1] ?? 0) }
    } catch (err) {
      // Redis away: the caller reads the spend from the store.
      if (err instanceof RedisUnavailableError) return undefined
      throw err
    }
  }
}

/** A hold as a member of each budget's sorted set: its id and amount. */
const member = (hold: LedgerHold) => `${hold.id}:${hold.amountUsd}`
