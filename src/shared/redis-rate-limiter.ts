// The RateLimiter shared by every instance: one Lua script per admission checks and charges all of a request's counters atomically in Redis; another corrects its token charge when it ends.

import { GatewayError } from '../errors'
import { type Admission, type LimitCheck, MemoryRateLimiter, type RateLimiter } from '../policy/rate-limiter'
import { luaScript, RedisUnavailableError, type RedisLink } from './redis-link'

/**
 * The same sliding window as MemoryRateLimiter: per counter a hash of one-second buckets, plus
 * `sum` (what the live buckets hold) and `low` (the oldest second not yet taken out of `sum`).
 * What was charged in second s counts during seconds s … s + 59 (so Retry-After is 1..60). The
 * common path reads two fields and writes three per counter; buckets leave `sum` as time passes,
 * one second at a time, and the buckets are scanned only to say when a refused request fits.
 *
 * Checks every counter, and only when all have room charges them all. Returns {0, 0} when
 * admitted, else {index of the refused counter (1-based), seconds until it has room}.
 * KEYS: the n counters. ARGV: now (ms), n, then limit and cost per counter.
 */
const ADMIT = luaScript(`
local now = tonumber(ARGV[1])
local sec = math.floor(now / 1000)
local n = tonumber(ARGV[2])
local function live(key)
  local low = tonumber(redis.call('HGET', key, 'low') or sec)
  local sum = tonumber(redis.call('HGET', key, 'sum') or '0')
  if low <= sec - 60 then
    if sec - 60 - low > 60 then
      sum = 0
      local h = redis.call('HGETALL', key)
      for j = 1, #h, 2 do
        local s = tonumber(h[j])
        if s then
          if s > sec - 60 then sum = sum + tonumber(h[j + 1]) else redis.call('HDEL', key, h[j]) end
        end
      end
    else
      for s = low, sec - 60 do
        local c = redis.call('HGET', key, s)
        if c then
          sum = sum - tonumber(c)
          redis.call('HDEL', key, s)
        end
      end
    end
    redis.call('HSET', key, 'low', sec - 59, 'sum', sum)
  end
  return sum
end
for i = 1, n do
  local key = KEYS[i]
  local limit = tonumber(ARGV[1 + 2 * i])
  local cost = tonumber(ARGV[2 + 2 * i])
  local used = live(key)
  if used + cost > limit then
    if cost > limit then return { i, 60 } end
    local h = redis.call('HGETALL', key)
    local buckets = {}
    for j = 1, #h, 2 do
      local s = tonumber(h[j])
      if s and s > sec - 60 then buckets[#buckets + 1] = { s, tonumber(h[j + 1]) } end
    end
    table.sort(buckets, function(x, y) return x[1] < y[1] end)
    for _, b in ipairs(buckets) do
      used = used - b[2]
      if used + cost <= limit then return { i, math.max(1, math.ceil(((b[1] + 60) * 1000 - now) / 1000)) } end
    end
    return { i, 60 }
  end
end
for i = 1, n do
  local key = KEYS[i]
  local cost = tonumber(ARGV[2 + 2 * i])
  redis.call('HINCRBY', key, sec, cost)
  redis.call('HINCRBY', key, 'sum', cost)
  -- An instance whose clock is behind may charge a second before 'low': it must leave 'sum' too.
  if tonumber(redis.call('HGET', key, 'low') or '1e18') > sec then redis.call('HSET', key, 'low', sec) end
  redis.call('PEXPIRE', key, 61000)
end
return { 0, 0 }
`)

/**
 * Adds `delta` to the bucket of the second a charge was made in, on every counter charged. A charge
 * made in a second that no longer counts is not corrected (nor one older than 'low': it has left 'sum').
 * KEYS: the counters. ARGV: now (ms), the charge's second, delta.
 */
const CORRECT = luaScript(`
local sec = math.floor(tonumber(ARGV[1]) / 1000)
local at, delta = tonumber(ARGV[2]), tonumber(ARGV[3])
if at < sec - 60 then return 0 end
for _, key in ipairs(KEYS) do
  local low = tonumber(redis.call('HGET', key, 'low') or '-1')
  if low >= 0 and at >= low then
    redis.call('HINCRBY', key, at, delta)
    redis.call('HINCRBY', key, 'sum', delta)
    redis.call('PEXPIRE', key, 61000)
  end
end
return 0
`)

export interface RedisRateLimiterOptions {
  /** GW_REDIS_REQUIRED: while Redis is away, limited requests get 503 instead of local counters. */
  required: boolean
  /** Key prefix, so several gateways (or tests) can share one Redis. */
  prefix?: string
}

export class RedisRateLimiter implements RateLimiter {
  /** Each instance's own counters, used only while Redis is unreachable (and GW_REDIS_REQUIRED is false). */
  readonly local = new MemoryRateLimiter()
  private readonly prefix: string

  constructor(
    private readonly link: RedisLink,
    private readonly opts: RedisRateLimiterOptions,
  ) {
    this.prefix = opts.prefix ?? 'gw:rl:'
  }

  /** One EVALSHA: every check, all charged or none. */
  async admit(checks: readonly LimitCheck[], nowMs = Date.now()): Promise<Admission> {
    if (!checks.length) return { ok: true }
    const args = [String(nowMs), String(checks.length)]
    for (const c of checks) args.push(String(c.limit), String(Math.round(c.cost)))
    try {
      const [index, retry] = (await this.link.eval(
        ADMIT,
        checks.map((c) => this.prefix + c.key),
        args,
      )) as [number, number]
      if (index === 0) return { ok: true }
      return { ok: false, key: (checks[index - 1] as LimitCheck).key, retryAfterSeconds: retry }
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) throw err
      if (this.opts.required)
        throw new GatewayError(503, 'gateway_error', 'Rate limits cannot be checked: the shared counter store (Redis) is unreachable', {
          headers: { 'retry-after': '1' },
        })
      return this.local.admit(checks, nowMs)
    }
  }

  /**
   * One EVALSHA, made when the request ends so that every instance counts its real tokens before
   * its answer is out (PRODUCT §10). Bounded by the link's command timeout; while Redis is away it
   * corrects this instance's own counters at once. Never rejects: an answer does not fail on it.
   */
  async adjust(keys: readonly string[], delta: number, atMs: number, nowMs = Date.now()): Promise<void> {
    const at = Math.floor(atMs / 1000)
    if (delta === 0 || !keys.length || at < Math.floor(nowMs / 1000) - 60) return
    try {
      await this.link.eval(
        CORRECT,
        keys.map((k) => this.prefix + k),
        [String(nowMs), String(at), String(Math.round(delta))],
      )
    } catch (err) {
      if (err instanceof RedisUnavailableError) this.local.adjust(keys, delta, atMs, nowMs)
      else console.error('gw: correcting a token charge failed:', err instanceof Error ? err.message : err)
    }
  }
}
