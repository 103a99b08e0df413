// The RateLimiter shared by every instance: one Lua script per admission checks and charges all of a request's counters atomically in Redis, carrying the token corrections of the requests that ended meanwhile.

import { GatewayError } from '../errors'
import { type Admission, type LimitCheck, MemoryRateLimiter, type RateLimiter } from '../policy/rate-limiter'
import { luaScript, type RedisCountersOptions, RedisUnavailableError, type RedisLink } from './redis-link'

/**
 * The same sliding window as MemoryRateLimiter: per counter a hash of one-second buckets, plus
 * `sum` (what the live buckets hold) and `low` (the oldest second not yet taken out of `sum`).
 * What was charged in second s counts during seconds s … s + 59 (so Retry-After is 1..60). The
 * common path reads two fields and writes three per counter; buckets leave `sum` as time passes,
 * one second at a time, and the buckets are scanned only to say when a refused request fits.
 *
 * First applies the token-charge corrections this instance made since its last call (see
 * RedisRateLimiter.adjust), then checks every counter, and only when all have room charges them
 * all. Returns {0, 0} when admitted (or when there was nothing to check), else {index of the
 * refused counter (1-based), seconds until it has room}.
 * KEYS: the n counters, then each correction's counters. ARGV: now (ms), n, limit, cost and need
 * (what must fit: LimitCheck.need) per counter, the number of corrections, then per correction: its second, delta and number of counters.
 */
const ADMIT = luaScript(`
local now = tonumber(ARGV[1])
local sec = math.floor(now / 1000)
local n = tonumber(ARGV[2])
local a = 3 + 3 * n
local k = n
for _ = 1, tonumber(ARGV[a]) do
  local at, delta, nk = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  a = a + 3
  -- A charge made in a second that no longer counts is not corrected (nor one older than 'low').
  if at >= sec - 60 then
    for j = k + 1, k + nk do
      local key = KEYS[j]
      local low = tonumber(redis.call('HGET', key, 'low') or '-1')
      if low >= 0 and at >= low then
        redis.call('HINCRBY', key, at, delta)
        redis.call('HINCRBY', key, 'sum', delta)
        redis.call('PEXPIRE', key, 61000)
      end
    end
  end
  k = k + nk
end
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
  local limit = tonumber(ARGV[3 * i])
  local need = tonumber(ARGV[2 + 3 * i])
  local used = live(key)
  if used + need > limit then
    if need > limit then return { i, 60 } end
    local h = redis.call('HGETALL', key)
    local buckets = {}
    for j = 1, #h, 2 do
      local s = tonumber(h[j])
      if s and s > sec - 60 then buckets[#buckets + 1] = { s, tonumber(h[j + 1]) } end
    end
    table.sort(buckets, function(x, y) return x[1] < y[1] end)
    for _, b in ipairs(buckets) do
      used = used - b[2]
      if used + need <= limit then return { i, math.max(1, math.ceil(((b[1] + 60) * 1000 - now) / 1000)) } end
    end
    return { i, 60 }
  end
end
for i = 1, n do
  local key = KEYS[i]
  local cost = tonumber(ARGV[1 + 3 * i])
  redis.call('HINCRBY', key, sec, cost)
  redis.call('HINCRBY', key, 'sum', cost)
  -- An instance whose clock is behind may charge a second before 'low': it must leave 'sum' too.
  if tonumber(redis.call('HGET', key, 'low') or '1e18') > sec then redis.call('HSET', key, 'low', sec) end
  redis.call('PEXPIRE', key, 61000)
end
return { 0, 0 }
`)

/** A token-charge correction on its way to Redis. */
interface Correction {
  keys: readonly string[]
  delta: number
  atMs: number
}

export class RedisRateLimiter implements RateLimiter {
  /** Each instance's own counters, used only while Redis is unreachable (and GW_REDIS_REQUIRED is false). */
  readonly local = new MemoryRateLimiter()
  private readonly prefix: string
  /** The corrections not yet sent, and the promise their requests' answers wait on. */
  private batch: { corrections: Correction[]; written: ReturnType<typeof Promise.withResolvers<void>> } | undefined

  constructor(
    private readonly link: RedisLink,
    private readonly opts: RedisCountersOptions,
  ) {
    this.prefix = opts.prefix ?? 'gw:rl:'
  }

  /** One EVALSHA: the corrections waiting (see adjust), then the checks (none when only corrections are sent). */
  async admit(checks: readonly LimitCheck[], nowMs = Date.now()): Promise<Admission> {
    const batch = this.batch
    this.batch = undefined
    if (!checks.length && !batch) return { ok: true }
    const corrections = batch?.corrections ?? []
    const keys = checks.map((c) => this.prefix + c.key)
    const args = [String(nowMs), String(checks.length)]
    for (const c of checks) args.push(String(c.limit), String(Math.round(c.cost)), String(Math.round(c.need ?? c.cost)))
    args.push(String(corrections.length))
    for (const c of corrections) {
      args.push(String(Math.floor(c.atMs / 1000)), String(Math.round(c.delta)), String(c.keys.length))
      for (const k of c.keys) keys.push(this.prefix + k)
    }
    try {
      const [index, retry] = (await this.link.eval(ADMIT, keys, args)) as [number, number]
      if (index === 0) return { ok: true }
      return { ok: false, key: (checks[index - 1] as LimitCheck).key, retryAfterSeconds: retry }
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) {
        if (corrections.length) console.error('gw: correcting token charges failed:', err instanceof Error ? err.message : err)
        throw err
      }
      for (const c of corrections) this.local.adjust(c.keys, c.delta, c.atMs, nowMs)
      if (this.opts.required && checks.some((c) => !c.own))
        throw new GatewayError(503, 'gateway_error', 'Rate limits cannot be checked: the shared counter store (Redis) is unreachable', {
          headers: { 'retry-after': '1' },
        })
      return this.local.admit(checks, nowMs)
    } finally {
      // Written (or, Redis away, counted here): the answers waiting on them may end.
      batch?.written.resolve()
    }
  }

  /**
   * Made when a request ends: every instance counts its real tokens before its answer is out
   * (PRODUCT §10), so the promise is settled once Redis has the correction. The corrections made
   * in one turn of the event loop go together, in the first admission sent meanwhile (under load,
   * no round trip of their own) or alone at the end of the turn. Bounded by the link's command
   * timeout; Redis away, they correct this instance's own counters. Never rejects.
   */
  adjust(keys: readonly string[], delta: number, atMs: number, nowMs = Date.now()): Promise<void> | undefined {
    if (delta === 0 || !keys.length || Math.floor(atMs / 1000) < Math.floor(nowMs / 1000) - 60) return undefined
    if (!this.batch) {
      this.batch = { corrections: [], written: Promise.withResolvers<void>() }
      setImmediate(() => void this.admit([], nowMs).catch(() => {}))
    }
    this.batch.corrections.push({ keys, delta, atMs })
    return this.batch.written.promise
  }
}
