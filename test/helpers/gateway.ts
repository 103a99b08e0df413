// Starts a real gw on a random port with an in-memory database (or, with GW_TEST_STORE=postgres, a fresh PostgreSQL schema), pointed at fake upstreams.

import { type Env, loadConfig } from '../../src/config'
import type { ProviderId } from '../../src/providers/provider-id'
import { type Gateway, type StartOptions, startGateway } from '../../src/server'
import type { FakeUpstream } from '../fakes/upstream'
import { freshSchema, TEST_REDIS_URL, TEST_SECRET, TEST_STORE, TEST_WITH_REDIS } from './servers'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

const BASE_URL_VARS: Record<ProviderId, string> = {
  openai: 'GW_OPENAI_BASE_URL',
  anthropic: 'GW_ANTHROPIC_BASE_URL',
  google: 'GW_GOOGLE_BASE_URL',
  mistral: 'GW_MISTRAL_BASE_URL',
}
const KEY_VARS: Record<ProviderId, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GEMINI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
}

export interface TestGateway {
  gw: Gateway
  url: string
  /** The default org's service key. */
  key: string
  /** fetch against the gateway with the service key unless headers say otherwise. */
  fetch(path: string, init?: RequestInit): Promise<Response>
  /** POST /v1/chat/completions with the service key. */
  chat(body: unknown, headers?: Record<string, string>): Promise<Response>
  admin(method: string, path: string, body?: unknown): Promise<Response>
  /** The log entry of a request, as the logs API returns it. */
  log(requestId: string, key?: string): Promise<Record<string, unknown>>
  stop(): Promise<void>
}

export async function startTestGateway(
  fakes: Partial<Record<ProviderId, FakeUpstream>> = {},
  env: Env = {},
  opts: StartOptions = {},
): Promise<TestGateway> {
  const vars: Env = {
    GW_DB: ':memory:',
    GW_HOST: '127.0.0.1',
    GW_PORT: '0',
    GW_ADMIN_TOKEN: ADMIN_TOKEN,
    GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
  }
  for (const [p, fake] of Object.entries(fakes) as [ProviderId, FakeUpstream][]) {
    vars[BASE_URL_VARS[p]] = fake.url
    vars[KEY_VARS[p]] = fake.apiKey
  }
  // The PostgreSQL leg of the matrix: a fresh schema per gateway, unless the test chose its own database.
  const schema = TEST_STORE === 'postgres' && !env.GW_DB && !env.GW_DATABASE_URL ? await freshSchema() : undefined
  if (schema) Object.assign(vars, { GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET })
  // …and, when the leg has Redis, shared counters and notices under a prefix of this gateway's own.
  if (schema && TEST_WITH_REDIS) Object.assign(vars, { GW_REDIS_URL: TEST_REDIS_URL, GW_REDIS_PREFIX: `gwtest:${schema.schema}:` })
  const gw = await startGateway(loadConfig({ ...vars, ...env }), opts)
  const key = gw.generatedKey ?? env.GW_SERVICE_KEY
  if (!key) throw new Error('test gateway did not generate a service key (nor was GW_SERVICE_KEY given)')
  const url = gw.url
  const tg: TestGateway = {
    gw,
    url,
    key,
    fetch(path, init = {}) {
      const headers = new Headers(init.headers)
      if (!headers.has('authorization')) headers.set('authorization', `GwKey ${key}`)
      return fetch(`${url}${path}`, { ...init, headers })
    },
    chat(body, headers = {}) {
      return tg.fetch('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    },
    admin(method, path, body) {
      return fetch(`${url}/admin${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    },
    async log(requestId, k = key) {
      const res = await fetch(`${url}/v1/logs/${requestId}`, { headers: { authorization: `GwKey ${k}` } })
      if (res.status !== 200) throw new Error(`log ${requestId}: HTTP ${res.status} ${await res.text()}`)
      return (await res.json()) as Record<string, unknown>
    },
    async stop() {
      await gw.stop()
      await schema?.drop()
    },
  }
  return tg
}

/** Reads an SSE response into its `data:` payloads (JSON-parsed, except `[DONE]`). */
export async function readSse(res: Response): Promise<(Record<string, unknown> | '[DONE]')[]> {
  const text = await res.text()
  const out: (Record<string, unknown> | '[DONE]')[] = []
  for (const block of text.split('\n\n')) {
    const line = block.trim()
    if (!line) continue
    if (!line.startsWith('data: ')) throw new Error(`not an SSE data line: ${line}`)
    const data = line.slice(6)
    out.push(data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Record<string, unknown>))
  }
  return out
}
