// `gw usage` (a table, or --json), `gw logs prune` and `gw budget set|list|remove`, run as a user would on a gateway's database file.

import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway } from '../helpers/gateway'

// Each test spawns gw several times; on a loaded machine one spawn can take a second or more.
setDefaultTimeout(60_000)

const dir = mkdtempSync(join(tmpdir(), 'gw-usage-cli-'))
const db = join(dir, 'gw.db')
const main = join(import.meta.dir, '../../src/main.ts')
let openai: FakeUpstream

function gw(...args: string[]) {
  const p = Bun.spawnSync([process.execPath, main, ...args], { env: { PATH: process.env.PATH ?? '', GW_DB: db }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

beforeAll(async () => {
  openai = await startFake('openai')
  const g = await startTestGateway({ openai }, { GW_DB: db })
  for (const model of ['openai/gpt-4o', 'openai/gpt-4o', 'openai/gpt-4o-mini']) {
    openai.enqueue({ kind: 'reply', usage: { prompt: 1000, completion: 100 } })
    await (await g.chat({ model, messages: [{ role: 'user', content: 'hi' }] })).text()
  }
  await g.stop()
})
afterAll(async () => {
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('gw usage prints a table by group, and the same figures with --json', () => {
  const table = gw('usage', '--group-by', 'model')
  expect(table.code).toBe(0)
  const lines = table.out.trim().split('\n')
  expect(lines[0]).toMatch(/^model\s+requests\s+errors\s+input\s+cached\s+cache write\s+output\s+reasoning\s+cost USD$/)
  // gpt-4o: 2 × (1000 × $2.50 + 100 × $10) / 1M = $0.007; gpt-4o-mini: 1000 × $0.15 + 100 × $0.60 = $0.00021.
  expect(lines[2]).toMatch(/^openai\/gpt-4o\s+2\s+0\s+2000\s+0\s+0\s+200\s+0\s+0\.007$/)
  expect(lines[3]).toMatch(/^openai\/gpt-4o-mini\s+1\s+0\s+1000\s+0\s+0\s+100\s+0\s+0\.00021$/)

  const json = gw('usage', '--json')
  expect(JSON.parse(json.out)).toEqual({
    data: [
      {
        key: new Date().toISOString().slice(0, 10),
        requests: 3,
        errors: 0,
        tokens: { input: 3000, cachedInput: 0, cacheWrite: 0, output: 300, reasoning: 0 },
        costUsd: 0.00721,
      },
    ],
  })
  const bad = gw('usage', '--group-by', 'colour')
  expect(bad.code).toBe(1)
  expect(bad.err).toContain('Invalid groupBy "colour"')
})

test('gw logs prune deletes raw entries and keeps the report', () => {
  expect(gw('logs', 'prune', '--older-than', '1d').out).toMatch(/^deleted\s+0$/m)
  expect(gw('logs', 'prune', '--older-than', 'soon').err).toContain('--older-than must be a duration')
  expect(gw('logs', 'prune', '--older-than', '0s', '--json').out).toContain('"deleted": 3')
  expect(JSON.parse(gw('usage', '--json').out).data[0]).toMatchObject({ requests: 3, costUsd: 0.00721 })
})

test('gw budget set, list and remove edit the policy and show the spend', () => {
  const set = gw('budget', 'set', '--scope', 'org', '--period', 'month', '--usd', '0.05', '--json')
  expect(set.code).toBe(0)
  expect(JSON.parse(set.out).budgets).toEqual([{ scope: 'org', period: 'month', usd: 0.05 }])
  // Setting the same scope and period again replaces it.
  expect(JSON.parse(gw('budget', 'set', '--scope', 'org', '--period', 'month', '--usd', '0.1', '--json').out).budgets).toEqual([{ scope: 'org', period: 'month', usd: 0.1 }])
  expect(gw('budget', 'list').out).toMatch(/^org\s+month\s+0\.1\s+0\.00721\s+0\s+0\.09279\s/m)
  const [row] = JSON.parse(gw('budget', 'list', '--json').out).data
  expect(row).toMatchObject({ scope: 'org', period: 'month', usd: 0.1, spentUsd: 0.00721, reservedUsd: 0 })
  expect(row.remainingUsd).toBeCloseTo(0.1 - 0.00721, 9)
  expect(gw('budget', 'set', '--scope', 'team', '--period', 'month', '--usd', '1').err).toContain('budgets')
  expect(JSON.parse(gw('budget', 'remove', '--scope', 'org', '--period', 'month', '--json').out).budgets).toEqual([])
  expect(gw('budget', 'remove', '--scope', 'org', '--period', 'month').err).toContain('has no org budget per month')
})
