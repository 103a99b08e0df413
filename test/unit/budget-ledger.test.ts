// Both budget ledgers (in memory; shared in Redis when reachable): atomic reservations under every budget, settlement, spend loaded once,
// holds that lapse after their lease unless renewed.

import { afterAll, describe, expect, test } from 'bun:test'
import { type BudgetCheck, type BudgetLedger, type LedgerHold, MemoryBudgetLedger, type Reservation } from '../../src/policy/budget-ledger'
import { RedisBudgetLedger } from '../../src/shared/redis-budget-ledger'
import { RedisLink } from '../../src/shared/redis-link'
import { serversFor, TEST_REDIS_URL } from '../helpers/servers'

const redisUp = await serversFor('budget ledger in Redis', { redis: true })
const links: RedisLink[] = []
afterAll(() => links.forEach((l) => l.close()))

/** Ledgers sharing one set of counters: the memory one alone, or several instances on one Redis prefix. */
const makers: Record<'memory' | 'redis', (instances: number) => Promise<BudgetLedger[]>> = {
  memory: async () => [new MemoryBudgetLedger()],
  redis: async (instances) => {
    const prefix = `gw:test:${Bun.randomUUIDv7()}:`
    return Promise.all(
      Array.from({ length: instances }, async () => {
        const link = new RedisLink(TEST_REDIS_URL)
        links.push(link)
        await link.connect()
        return new RedisBudgetLedger(link, { required: false, prefix })
      }),
    )
  },
}

const LEASE = 60_000
const held = (r: Reservation): LedgerHold => {
  if (!r.ok) throw new Error(`expected a reservation, got ${JSON.stringify(r)}`)
  return r.hold
}

const check = (key: string, limitUsd: number, spent = 0, loads = { n: 0 }): BudgetCheck => ({
  key,
  limitUsd,
  loadSpent: async () => {
    loads.n++
    return spent
  },
})

for (const kind of ['memory', 'redis'] as const) {
  describe.skipIf(kind === 'redis' && !redisUp)(`${kind} ledger`, () => {
    test('a reservation fits under every budget or takes nothing; settlement replaces it by the real cost', async () => {
      const [l] = (await makers[kind](1)) as [BudgetLedger]
      const org = check('org:a:day:x', 1, 0.25)
      const key = check('key:k:day:x', 0.5)
      const r = await l.reserve([org, key], 0.4, LEASE)
      expect(r).toMatchObject({ ok: true, hold: { keys: ['org:a:day:x', 'key:k:day:x'], amountUsd: 0.4 } })
      expect(await l.reserve([org, key], 0.2, LEASE)).toMatchObject({ ok: false, key: 'key:k:day:x', spentUsd: 0, reservedUsd: 0.4 })
      // The refused request reserved nothing on the org budget either.
      expect(await l.state('org:a:day:x')).toEqual({ spentUsd: 0.25, reservedUsd: 0.4 })
      await l.settle(held(r), 0.1)
      const settled = await l.state('org:a:day:x')
      expect(settled?.spentUsd).toBeCloseTo(0.35, 9)
      expect(settled?.reservedUsd).toBeCloseTo(0, 9)
      expect((await l.state('key:k:day:x'))?.spentUsd).toBeCloseTo(0.1, 9)
      expect(await l.state('never:used')).toBeUndefined()
    })

    test('concurrent reservations never overspend, across instances too; the stored spend is loaded once', async () => {
      const ledgers = await makers[kind](3)
      const loads = { n: 0 }
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) => (ledgers[i % ledgers.length] as BudgetLedger).reserve([check('org:b:month:x', 10, 2, loads)], 1, LEASE)),
      )
      expect(results.filter((r) => r.ok)).toHaveLength(8)
      expect((await (ledgers[0] as BudgetLedger).state('org:b:month:x'))?.reservedUsd).toBe(8)
      // Each instance may read the store once; only one reading counts.
      expect(loads.n).toBeLessThanOrEqual(ledgers.length)
    })

    test('a hold never settled (its request or its process died) lapses after its lease, and the next request fits', async () => {
      // Two instances on Redis: the first reserves and is never heard of again.
      const ledgers = await makers[kind](2)
      const [crashed, next] = [ledgers[0], ledgers[ledgers.length - 1]] as [BudgetLedger, BudgetLedger]
      const org = check('org:c:day:x', 1)
      const lost = held(await crashed.reserve([org], 0.8, 300))
      expect(await next.reserve([org], 0.5, LEASE)).toMatchObject({ ok: false, reservedUsd: 0.8 })
      await Bun.sleep(450)
      expect(await next.state('org:c:day:x')).toEqual({ spentUsd: 0, reservedUsd: 0 })
      const fresh = held(await next.reserve([org], 0.5, LEASE))
      // A late settlement of the lapsed hold adds its cost and gives back nothing it no longer holds.
      await crashed.settle(lost, 0.2)
      expect(await next.state('org:c:day:x')).toEqual({ spentUsd: 0.2, reservedUsd: 0.5 })
      await next.settle(fresh, 0)
      expect(await next.state('org:c:day:x')).toEqual({ spentUsd: 0.2, reservedUsd: 0 })
    })

    test('a renewed hold outlives its first lease; once renewals stop it lapses and renewing does not bring it back', async () => {
      const [l] = (await makers[kind](1)) as [BudgetLedger]
      const org = check('org:d:day:x', 1)
      const hold = held(await l.reserve([org], 0.6, 300))
      for (let i = 0; i < 6; i++) {
        await Bun.sleep(100)
        await l.renew(hold)
      }
      // 600 ms after the reservation, twice its lease: still held.
      expect(await l.state('org:d:day:x')).toEqual({ spentUsd: 0, reservedUsd: 0.6 })
      expect(await l.reserve([org], 0.6, LEASE)).toMatchObject({ ok: false })
      await Bun.sleep(450)
      await l.renew(hold)
      expect(await l.state('org:d:day:x')).toEqual({ spentUsd: 0, reservedUsd: 0 })
      expect(await l.reserve([org], 0.6, LEASE)).toMatchObject({ ok: true })
    })
  })
}
