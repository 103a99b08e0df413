// The BudgetLedger shared by every instance: spent and reserved USD per budget in a Redis hash, reserved for all of a request's budgets by one Lua script.

import { GatewayError } from '../errors'
import { type BudgetCheck, type BudgetLedger, type BudgetState, MemoryBudgetLedger, type Reservation } from '../policy/budget-ledger'
import { luaScript, RedisUnavailableError, type RedisLink } from './redis-link'

/** A budget unused this long leaves Redis; its spend is read again from the store's roll-ups. */
const TTL_MS = 6 * 3600_000

/**
 * KEYS: the budgets. ARGV: amount, then each budget's limit. A budget not in Redis yet answers
 * {-1, index} (the caller loads its spend from the store and tries again). Otherwise, only when
 * the amount fits under every budget, reserves it on all: {0}; else {index, spent, reserved}.
 */
const RESERVE = luaScript(`
local amount = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 0 then return { -1, i } end
end
for i, key in ipairs(KEYS) do
  local spent = tonumber(redis.call('HGET', key, 'spent') or '0')
  local reserved = tonumber(redis.call('HGET', key, 'reserved') or '0')
  if spent + reserved + amount > tonumber(ARGV[i + 1]) then return { i, tostring(spent), tostring(reserved) } end
end
for _, key in ipairs(KEYS) do
  redis.call('HINCRBYFLOAT', key, 'reserved', amount)
  redis.call('PEXPIRE', key, ${TTL_MS})
end
return { 0 }
`)

/** ARGV: reserved, actual. Gives the reservation back and adds the real cost, on budgets still held. */
const SETTLE = luaScript(`
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    local left = tonumber(redis.call('HINCRBYFLOAT', key, 'reserved', -tonumber(ARGV[1])))
    if left < 0 then redis.call('HSET', key, 'reserved', '0') end
    redis.call('HINCRBYFLOAT', key, 'spent', tonumber(ARGV[2]))
  end
end
return 1
`)


export class RedisBudgetLedger implements BudgetLedger {
  /** This instance's own counters, used only while Redis is unreachable (and GW_REDIS_REQUIRED is false). */
  readonly local = new MemoryBudgetLedger()
  private readonly loading = new Map<string, Promise<void>>()
  constructor(
    private readonly link: RedisLink,
    private readonly opts: { required: boolean; prefix?: string },
  ) {}

  private key(k: string): string {
    return `${this.opts.prefix ?? 'gw:budget:'}${k}`
  }

  async reserve(checks: readonly BudgetCheck[], amountUsd: number): Promise<Reservation> {
    const keys = checks.map((c) => this.key(c.key))
    const args = [String(amountUsd), ...checks.map((c) => String(c.limitUsd))]
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const r = (await this.link.eval(RESERVE, keys, args)) as [number, number | string, string?]
        if (r[0] === 0) return { ok: true }
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
      return this.local.reserve(checks, amountUsd)
    }
  }

  /** Puts a budget's stored spend into Redis; concurrent requests of this instance share one reading. */
  private load(c: BudgetCheck): Promise<void> {
    let p = this.loading.get(c.key)
    if (!p) {
      p = (async () => {
        try {
          const spent = await c.loadSpent()
          await this.link.send('HSETNX', [this.key(c.key), 'spent', String(spent)])
          await this.link.send('PEXPIRE', [this.key(c.key), String(TTL_MS)])
        } finally {
          this.loading.delete(c.key)
        }
      })()
      this.loading.set(c.key, p)
    }
    return p
  }

  async settle(keys: readonly string[], reservedUsd: number, actualUsd: number): Promise<void> {
    try {
      await this.link.eval(SETTLE, keys.map((k) => this.key(k)), [String(reservedUsd), String(actualUsd)])
    } catch (err) {
      // Called after the answer was sent: a settlement that cannot be made is reported, never thrown.
      if (err instanceof RedisUnavailableError) await this.local.settle(keys, reservedUsd, actualUsd)
      else console.error('gw: settling a budget reservation failed:', err instanceof Error ? err.message : err)
    }
  }

  async state(key: string): Promise<BudgetState | undefined> {
    try {
      const [spent, reserved] = (await this.link.send('HMGET', [this.key(key), 'spent', 'reserved'])) as [string | null, string | null]
      if (spent === null) return undefined
      return { spentUsd: Number(spent), reservedUsd: Number(reserved ?? 0) }
    } catch (err) {
      if (err instanceof RedisUnavailableError) return this.local.state(key)
      throw err
    }
  }
}
