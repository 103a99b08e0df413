// An org of its own for budget tests, on any gw (started here or a spawned `gw serve`): the fake OpenAI
// as its provider, a policy, a service key, and the calls those tests make (requests, the admin view
// of each budget, the spend its log entries add up to).

import { afterAll, beforeAll, beforeEach, expect } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Env } from '../../src/config'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './gateway'

export interface BudgetSuite {
  readonly openai: FakeUpstream
  readonly gw: TestGateway
  /** A temporary directory of the suite's own, removed after it. */
  readonly dir: string
}

/** A suite's fake OpenAI and gw (with `env`, given the suite's directory): started before its tests, the fake reset before each, all stopped after. */
export function budgetSuite(env: (dir: string) => Env = () => ({})): BudgetSuite {
  const dir = mkdtempSync(join(tmpdir(), 'gw-budgets-'))
  let openai: FakeUpstream | undefined
  let gw: TestGateway | undefined
  beforeAll(async () => {
    openai = await startFake('openai')
    gw = await startTestGateway({ openai }, env(dir))
  })
  beforeEach(() => openai?.reset())
  afterAll(async () => {
    await gw?.stop()
    await openai?.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    dir,
    get openai() {
      return openai as FakeUpstream
    },
    get gw() {
      return gw as TestGateway
    },
  }
}

let seq = 0

type Answer = { res: Response; status: number; body: Record<string, any> }

export interface BudgetOrg {
  id: string
  key: string
  keyId: string
  /** POST to any endpoint with the org's key, on the org's gw or on `via` (another instance's URL). */
  post(path: string, body: object, headers?: Record<string, string>, via?: string): Promise<Answer>
  chat(body: object, headers?: Record<string, string>, via?: string): Promise<Answer>
  /** GET /admin/orgs/:org/budgets */
  budgets(): Promise<Record<string, any>[]>
  /** The sum of the org's log entries' costUsd. */
  spent(): Promise<number>
}

export async function budgetOrg(url: string, openai: FakeUpstream, policy: object, prefix = 'bud'): Promise<BudgetOrg> {
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  const id = `${prefix}-${++seq}`
  expect((await admin('POST', '/orgs', { id, name: id })).status).toBe(201)
  await admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
  expect((await admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  const { key, id: keyId } = (await (await admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string; id: string }
  const post: BudgetOrg['post'] = async (path, body, headers = {}, via = url) => {
    const res = await fetch(`${via}${path}`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
    return { res, status: res.status, body: (await res.json()) as Record<string, any> }
  }
  return {
    id,
    key,
    keyId,
    post,
    chat: (body, headers, via) => post('/v1/chat/completions', body, headers, via),
    budgets: async () => ((await (await admin('GET', `/orgs/${id}/budgets`)).json()) as { data: Record<string, any>[] }).data,
    spent: async () => {
      const list = (await (await fetch(`${url}/v1/logs?limit=500`, { headers: { authorization: `GwKey ${key}` } })).json()) as {
        data: Record<string, any>[]
      }
      return list.data.reduce((n, e) => n + (e.costUsd ?? 0), 0)
    },
  }
}
