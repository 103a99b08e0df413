// Budgets end to end (PRODUCT §11): reservation before sending, settlement to the real cost,
// refusals with Retry-After, no overspend under concurrency, spend that survives a restart, and
// the admin view of each budget.

import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { startGateway } from '../../src/server'
import { budgetOrg, budgetSuite } from '../helpers/budget-org'
import { ADMIN_TOKEN } from '../helpers/gateway'

const suite = budgetSuite((dir) => ({ GW_DB: join(dir, 'gw.db') }))
let orgSeq = 0

// gpt-4o: $2.50 / 1M input, $10 / 1M output. With max_tokens 100 a request reserves its body's
// bytes at the input price plus 100 output tokens: about $0.0014. Each answer really costs
// 100 × $2.50 + 100 × $10 per 1M = $0.00125.
const ask = (extra: object = {}) => ({ model: 'openai/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra })
const USAGE = { prompt: 100, completion: 100 }
const COST = (100 * 2.5 + 100 * 10) / 1e6

const orgWith = (policy: object) => budgetOrg(suite.gw.url, suite.openai, policy)

const secondsToUtcMidnight = () => {
  const d = new Date()
  return (Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - d.getTime()) / 1000
}

test('40 concurrent requests against a budget that fits a few never overspend it', async () => {
  const budget = 0.006
  const org = await orgWith({ budgets: [{ scope: 'org', usd: budget, period: 'day' }] })
  for (let i = 0; i < 40; i++) suite.openai.enqueue({ kind: 'reply', usage: USAGE, delayMs: 50 })
  const results = await Promise.all(Array.from({ length: 40 }, () => org.chat(ask())))
  const ok = results.filter((r) => r.status === 200)
  const refused = results.filter((r) => r.status === 429)
  expect(ok.length + refused.length).toBe(40)
  expect(ok.length).toBeGreaterThanOrEqual(3)
  expect(ok.length).toBeLessThanOrEqual(Math.floor(budget / COST))
  const spent = await org.spent()
  expect(spent).toBeCloseTo(ok.length * COST, 12)
  expect(spent).toBeLessThanOrEqual(budget)
  const r = refused[0] as (typeof refused)[number]
  expect(r.body).toMatchObject({ error: true, code: 'budget_exceeded', requestId: r.res.headers.get('x-gw-request-id') })
  expect(r.body.message).toMatch(/Budget exceeded for org "bud-\d+": \$0\.0060 per day \(UTC\); spent \$[\d.]+, reserved \$[\d.]+/)
  const retry = Number(r.res.headers.get('retry-after'))
  expect(retry).toBeGreaterThanOrEqual(1)
  expect(Math.abs(retry - secondsToUtcMidnight())).toBeLessThan(5)

  const [status] = await org.budgets()
  expect(status).toMatchObject({ scope: 'org', period: 'day', usd: budget, reservedUsd: 0 })
  expect(status?.spentUsd).toBeCloseTo(spent, 9)
  expect(status?.remainingUsd).toBeCloseTo(budget - spent, 9)
  expect(Date.parse(status?.resetsAt) - Date.now()).toBeCloseTo(secondsToUtcMidnight() * 1000, -4)
})

test('a failed request releases its reservation', async () => {
  // Room for exactly one reservation at a time.
  const org = await orgWith({ budgets: [{ scope: 'org', usd: 0.002, period: 'month' }] })
  suite.openai.enqueue({ kind: 'error', status: 500 })
  expect((await org.chat(ask())).status).toBe(502)
  suite.openai.enqueue({ kind: 'reply', usage: USAGE })
  expect((await org.chat(ask())).status).toBe(200)
  // $0.00125 spent: the next reservation no longer fits, until the month ends.
  const refused = await org.chat(ask())
  expect(refused.status).toBe(429)
  const d = new Date()
  const monthEnd = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  expect(Math.abs(Number(refused.res.headers.get('retry-after')) - (monthEnd - Date.now()) / 1000)).toBeLessThan(5)
  expect((await org.budgets())[0]).toMatchObject({ period: 'month', spentUsd: COST, reservedUsd: 0 })
})

test('a total budget has no Retry-After; a model without a price is refused unless allowed', async () => {
  const org = await orgWith({ budgets: [{ scope: 'org', usd: 0.0015, period: 'total' }] })
  suite.openai.enqueue({ kind: 'reply', usage: USAGE })
  expect((await org.chat(ask())).status).toBe(200)
  const refused = await org.chat(ask())
  expect(refused.status).toBe(429)
  expect(refused.res.headers.get('retry-after')).toBeNull()
  expect(refused.body.message).toContain('in total')

  const unpriced = await org.chat(ask({ model: 'openai/some-new-model' }))
  expect(unpriced.status).toBe(403)
  expect(unpriced.body).toMatchObject({ code: 'policy_violation' })
  expect(unpriced.body.message).toContain('"openai/some-new-model" has no known price')
  // A priced primary with an unpriced fallback could still reach the unpriced model.
  const viaChain = await org.chat(ask({ model: 'openai/gpt-4o-mini', fallback_chain: [{ model: 'openai/some-new-model' }] }))
  expect(viaChain.status).toBe(403)

  const open = await orgWith({ budgets: [{ scope: 'org', usd: 1, period: 'day' }], allowUnpricedModels: true })
  suite.openai.enqueue({ kind: 'reply', usage: USAGE })
  expect((await open.chat(ask({ model: 'openai/some-new-model' }))).status).toBe(200)
})

test('key and end-user budgets limit only their own subject', async () => {
  const org = await orgWith({
    budgets: [
      { scope: 'endUser', usd: 0.0015, period: 'day' },
      { scope: 'key', usd: 1, period: 'day' },
    ],
  })
  for (let i = 0; i < 4; i++) suite.openai.enqueue({ kind: 'reply', usage: USAGE })
  expect((await org.chat(ask({ user: 'alice' }))).status).toBe(200)
  const again = await org.chat(ask({ user: 'alice' }))
  expect(again.status).toBe(429)
  expect(again.body.message).toContain('end user "alice"')
  // Another end user, and requests without one, are not held by alice's budget.
  expect((await org.chat(ask(), { 'x-gw-end-user-id': 'bob' })).status).toBe(200)
  expect((await org.chat(ask())).status).toBe(200)

  const rows = await org.budgets()
  expect(rows).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ scope: 'endUser', subject: 'alice', spentUsd: COST, remainingUsd: expect.closeTo(0.0015 - COST, 9) }),
      expect.objectContaining({ scope: 'endUser', subject: 'bob', spentUsd: COST }),
      expect.objectContaining({ scope: 'key', subject: org.keyId, spentUsd: expect.closeTo(3 * COST, 9) }),
    ]),
  )
})

test('bad budgets are refused with the field named', async () => {
  for (const budgets of [[{ scope: 'team', usd: 1, period: 'day' }], [{ scope: 'org', usd: -1, period: 'day' }], [{ scope: 'org', usd: 1, period: 'week' }]]) {
    const id = `bud-bad-${++orgSeq}`
    await suite.gw.admin('POST', '/orgs', { id, name: id })
    const res = await suite.gw.admin('PUT', `/orgs/${id}/policy`, { budgets })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toMatch(/budgets/)
  }
})

describe('after a restart', () => {
  test('spend is read back from the store, so a spent budget stays spent', async () => {
    const org = await orgWith({ budgets: [{ scope: 'org', usd: 0.002, period: 'day' }] })
    suite.openai.enqueue({ kind: 'reply', usage: USAGE })
    expect((await org.chat(ask())).status).toBe(200)
    await suite.gw.stop()
    const again = await startGateway(loadConfig({ GW_DB: join(suite.dir, 'gw.db'), GW_HOST: '127.0.0.1', GW_PORT: '0', GW_ADMIN_TOKEN: ADMIN_TOKEN, GW_PROMPTS_DIR: '/nonexistent' }))
    try {
      const res = await fetch(`${again.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(ask()),
      })
      expect(res.status).toBe(429)
      expect(((await res.json()) as { message: string }).message).toContain('spent $0.0013')
    } finally {
      await again.stop()
    }
  })
})
