// Both rate limiters (in memory; shared in Redis when reachable) on a fake clock: sliding 60 s windows, all-or-nothing admission, exact Retry-After.

import { afterAll, describe, expect, test } from 'bun:test'
import { MemoryRateLimiter, type RateLimiter } from '../../src/policy/rate-limiter'
import { RedisLink } from '../../src/shared/redis-link'
import { RedisRateLimiter } from '../../src/shared/redis-rate-limiter'
import { privateServersAvailable, startPrivateRedis } from '../helpers/private-servers'
import { serversFor, TEST_REDIS_URL } from '../helpers/servers'

const T0 = 1_700_000_000_000 // a whole second
const redisUp = await serversFor('rate limiter in Redis', { redis: true })
const links: RedisLink[] = []
afterAll(() => links.forEach((l) => l.close()))

const makers: Record<'memory' | 'redis', () => Promise<RateLimiter>> = {
  memory: async () => new MemoryRateLimiter(),
  redis: async () => {
    const link = new RedisLink(TEST_REDIS_URL)
    links.push(link)
    await link.connect()
    // A fresh prefix per limiter: every test starts from empty counters.
    return new RedisRateLimiter(link, { required: true, prefix: `gw:test:${Bun.randomUUIDv7()}:` })
  },
}

for (const kind of ['memory', 'redis'] as const) {
  describe.skipIf(kind === 'redis' && !redisUp)(`${kind} limiter`, () => {
    const limiter = makers[kind]

    test('a window admits up to the limit, then says when the oldest request stops counting', async () => {
      const rl = await limiter()
      const rpm = [{ key: 'org:a:rpm', limit: 2, cost: 1 }]
      expect(await rl.admit(rpm, T0 + 500)).toEqual({ ok: true })
      expect(await rl.admit(rpm, T0 + 20_000)).toEqual({ ok: true })
      // The first request (second T0) counts until T0 + 60 s: from T0 + 30 s that is 30 s away.
      expect(await rl.admit(rpm, T0 + 30_000)).toEqual({ ok: false, key: 'org:a:rpm', retryAfterSeconds: 30 })
      expect((await rl.admit(rpm, T0 + 59_999)).ok).toBe(false)
      expect(await rl.admit(rpm, T0 + 60_000)).toEqual({ ok: true })
      // Now the T0 + 20 s request is the oldest: free at T0 + 80 s.
      expect(await rl.admit(rpm, T0 + 60_500)).toEqual({ ok: false, key: 'org:a:rpm', retryAfterSeconds: 20 })
    })

    test('Retry-After of a per-minute limit is 1..60, also when the limit was reached late in a second', async () => {
      const rl = await limiter()
      const rpm = [{ key: 'org:a:rpm', limit: 1, cost: 1 }]
      expect((await rl.admit(rpm, T0 + 999)).ok).toBe(true)
      // Refused at once: the earliest the charge can stop counting is the start of T0 + 60 s.
      expect(await rl.admit(rpm, T0 + 999)).toMatchObject({ ok: false, retryAfterSeconds: 60 })
      expect(await rl.admit(rpm, T0 + 59_999)).toMatchObject({ ok: false, retryAfterSeconds: 1 })
      expect((await rl.admit(rpm, T0 + 60_000)).ok).toBe(true)
    })

    test('admission is all or nothing across counters', async () => {
      const rl = await limiter()
      const org = { key: 'org:a:rpm', limit: 10, cost: 1 }
      const key = { key: 'key:k:rpm', limit: 1, cost: 1 }
      expect((await rl.admit([org, key], T0)).ok).toBe(true)
      expect(await rl.admit([org, key], T0)).toMatchObject({ ok: false, key: 'key:k:rpm' })
      // The refused request charged nothing: the org still has 9 left.
      for (let i = 0; i < 9; i++) expect((await rl.admit([org], T0)).ok).toBe(true)
      expect((await rl.admit([org], T0)).ok).toBe(false)
    })

    test('token costs: retry when enough tokens expire; adjust corrects a charge; a cost over the limit never fits', async () => {
      const rl = await limiter()
      const tpm = (cost: number) => [{ key: 'org:a:tpm', limit: 1000, cost }]
      expect((await rl.admit(tpm(400), T0)).ok).toBe(true)
      expect((await rl.admit(tpm(400), T0 + 10_000)).ok).toBe(true)
      // 800 used; 300 more needs the T0 charge gone (T0 + 60 s), not the second one.
      expect(await rl.admit(tpm(300), T0 + 30_000)).toMatchObject({ ok: false, retryAfterSeconds: 30 })
      await rl.adjust(['org:a:tpm'], -300, T0, T0 + 30_000) // the first request really used 100
      expect((await rl.admit(tpm(300), T0 + 30_000)).ok).toBe(true)
      expect(await rl.admit(tpm(5000), T0 + 30_000)).toMatchObject({ ok: false, retryAfterSeconds: 60 })
    })

    test('a token limit (need 1) admits while the window is below it, whatever the request is charged; then none until it is below again', async () => {
      const rl = await limiter()
      const tpm = (cost: number) => [{ key: 'org:t:tpm', limit: 1000, cost, need: 1 }]
      expect((await rl.admit(tpm(600), T0)).ok).toBe(true)
      expect((await rl.admit(tpm(300), T0 + 10_000)).ok).toBe(true)
      // 900 counted: below the limit, so a request charged 5,000 is admitted.
      expect((await rl.admit(tpm(5000), T0 + 20_000)).ok).toBe(true)
      // 5,900 counted: until the T0 + 20 s charge leaves the window, nothing.
      expect(await rl.admit(tpm(1), T0 + 30_000)).toMatchObject({ ok: false, key: 'org:t:tpm', retryAfterSeconds: 50 })
      expect((await rl.admit(tpm(1), T0 + 80_000)).ok).toBe(true)
      // Exactly at the limit is not below it.
      const full = [{ key: 'org:u:tpm', limit: 10, cost: 10, need: 1 }]
      expect((await rl.admit(full, T0)).ok).toBe(true)
      expect((await rl.admit(full, T0)).ok).toBe(false)
    })
  })
}

describe.skipIf(!redisUp)('redis limiter, two instances', () => {
  test('a token correction is written when the request ends, in one script call (shared with an admission made meanwhile): the other instances count it once adjust resolves', async () => {
    const link = new RedisLink(TEST_REDIS_URL)
    links.push(link)
    await link.connect()
    let evals = 0
    const counted = Object.assign(Object.create(link) as RedisLink, {
      eval: (...args: Parameters<RedisLink['eval']>) => {
        evals++
        return link.eval(...args)
      },
    })
    const prefix = `gw:test:${Bun.randomUUIDv7()}:`
    const a = new RedisRateLimiter(counted, { required: true, prefix })
    const b = new RedisRateLimiter(link, { required: true, prefix })
    const tpm = (cost: number) => [{ key: 'org:a:tpm', limit: 1000, cost }]
    const now = Date.now()
    expect((await a.admit(tpm(100), now)).ok).toBe(true)
    await a.adjust(['org:a:tpm'], 500, now, now) // the request really used 600
    expect(evals).toBe(2)
    // At once, no admission on a in between: b sees 600 used.
    expect((await b.admit(tpm(401), now)).ok).toBe(false)
    expect((await b.admit(tpm(400), now)).ok).toBe(true)
    await a.adjust(['org:a:tpm'], 0, now, now) // nothing to correct: no call
    expect(evals).toBe(2)
    // 1000 used. A correction made in the same turn as an admission on that instance rides on it
    // (applied before the check): one call for both, and the correction is written once it returns.
    const corrected = a.adjust(['org:a:tpm'], -500, now, now)
    expect((await a.admit(tpm(500), now)).ok).toBe(true)
    await corrected
    await Bun.sleep(20)
    expect(evals).toBe(3)
    expect((await b.admit(tpm(1), now)).ok).toBe(false)
  })
})

describe.skipIf(!privateServersAvailable())('redis limiter, Redis stalled', () => {
  test('a correction waits no longer than the command timeout, then counts on this instance', async () => {
    const redis = await startPrivateRedis()
    const link = new RedisLink(redis.url)
    try {
      expect(await link.connect()).toBe(true)
      const rl = new RedisRateLimiter(link, { required: false, prefix: 'gw:test:' })
      const now = Date.now()
      redis.pause()
      const started = performance.now()
      await rl.adjust(['org:a:tpm'], 700, now, now)
      expect(performance.now() - started).toBeLessThan(1500)
      expect((await rl.local.admit([{ key: 'org:a:tpm', limit: 1000, cost: 301 }], now)).ok).toBe(false)
      expect((await rl.local.admit([{ key: 'org:a:tpm', limit: 1000, cost: 300 }], now)).ok).toBe(true)
    } finally {
      redis.resume()
      link.close()
      await redis.destroy()
    }
  })
})
