// The exact response cache in Redis (PRODUCT §19, GW_REDIS_URL): every instance reads what another stored.
// Each answer is a key with its TTL; per org, a sorted set by expiry and a byte total bound the org's
// share: a put drops the org's expired members and, past the bound, those closest to expiry.

import type { ResponseCacheStore } from '../store/types'
import { luaScript, type RedisLink } from './redis-link'

/** KEYS: value, index, total. ARGV: value, ttl ms, expires at, max bytes, member (`bytes:key`), value-key prefix, now. */
const PUT = luaScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
local total = redis.call('INCRBY', KEYS[3], string.match(ARGV[5], '^(%d+):'))
-- An expired member's value is gone already (unless a later put of the same key holds it): only its bytes are given back.
local function drop(member, evict)
  local size, key = string.match(member, '^(%d+):(.*)$')
  if evict then redis.call('DEL', ARGV[6] .. key) end
  total = redis.call('DECRBY', KEYS[3], size)
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[7], 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[2], member)
  drop(member, false)
end
while total > tonumber(ARGV[4]) do
  local popped = redis.call('ZPOPMIN', KEYS[2])
  if #popped == 0 then break end
  drop(popped[1], true)
end
if total < 0 then redis.call('SET', KEYS[3], 0) end
return total
`)

export class RedisResponseCache implements ResponseCacheStore {
  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
  ) {}

  private valuePrefix(orgId: string): string {
    return `${this.prefix}${orgId}:v:`
  }

  async get(orgId: string, key: string): Promise<string | undefined> {
    const v = await this.link.send('GET', [this.valuePrefix(orgId) + key])
    return typeof v === 'string' ? v : undefined
  }

  async put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void> {
    const bytes = Buffer.byteLength(value)
    const vp = this.valuePrefix(orgId)
    await this.link.eval(
      PUT,
      [vp + key, `${this.prefix}${orgId}:idx`, `${this.prefix}${orgId}:bytes`],
      [value, String(Math.max(1, expiresAt - now)), String(expiresAt), String(maxOrgBytes), `${bytes}:${key}`, vp, String(now)],
    )
  }
}
