// GET /health reports each check (store, redis, log writer); /health/live and /health/ready answer orchestrators.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'
import { TEST_STORE } from '../helpers/servers'

let openai: FakeUpstream
let gw: TestGateway
beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

test('GET /health: status ok with every check, no authentication needed', async () => {
  expect(gw.gw.deps.store.kind).toBe(TEST_STORE) // this file runs in both legs of the store matrix
  const res = await fetch(`${gw.url}/health`)
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, unknown>
  expect(body).toMatchObject({
    ok: true,
    status: 'ok',
    checks: {
      store: { status: 'ok' },
      redis: { status: gw.gw.deps.config.redisUrl ? 'ok' : 'disabled' },
      logWriter: { status: 'ok', queued: 0, dropped: 0 },
    },
    requestId: res.headers.get('x-gw-request-id') as string,
  })
  // The log writer's check is reported once, under `logWriter` (PRODUCT §10), not again under a second key.
  expect(Object.keys(body).sort()).toEqual(['checks', 'ok', 'requestId', 'status'])
})

test('GET /health/live and /health/ready: 200 while the store is reachable and migrated', async () => {
  const live = await fetch(`${gw.url}/health/live`)
  expect(live.status).toBe(200)
  expect(((await live.json()) as { ok: boolean }).ok).toBe(true)
  const ready = await fetch(`${gw.url}/health/ready`)
  expect(ready.status).toBe(200)
  expect((await ready.json()) as object).toMatchObject({ ok: true, status: 'ok', checks: { store: { status: 'ok' } } })
})

/**
 * Makes the database refuse log entries until the returned function is called: PostgreSQL for real
 * (the table renamed away; the log thread writes on its own connection), the in-memory database of the
 * SQLite leg (written on this thread) through its store.
 */
async function refuseLogs(): Promise<() => Promise<void>> {
  const url = gw.gw.deps.config.databaseUrl
  if (url) {
    const sql = new SQL(url, { max: 1 })
    await sql`ALTER TABLE request_logs RENAME TO request_logs_away`
    return async () => {
      await sql`ALTER TABLE request_logs_away RENAME TO request_logs`
      await sql.close()
    }
  }
  const logs = gw.gw.deps.store.logs
  const insert = logs.insertLogs.bind(logs)
  logs.insertLogs = () => Promise.reject(new Error('refused for the test'))
  return async () => {
    logs.insertLogs = insert
  }
}

test('a database refusing log entries makes /health degraded (still 200), and ok again once they are written', async () => {
  const allow = await refuseLogs()
  const orig = console.error
  console.error = () => {}
  try {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
    expect(res.status).toBe(200)
    await res.text()
    let body: any
    for (let i = 0; i < 100 && body?.status !== 'degraded'; i++) {
      await Bun.sleep(20)
      body = await (await fetch(`${gw.url}/health`)).json()
    }
    expect(body).toMatchObject({ ok: true, status: 'degraded', checks: { logWriter: { status: 'degraded', queued: 1 } } })
  } finally {
    await allow()
    console.error = orig
  }
  // Retried after its back-off: flushed until written.
  for (let i = 0; i < 100 && gw.gw.deps.logs.queued > 0; i++) {
    await gw.gw.deps.logs.flush()
    await Bun.sleep(20)
  }
  expect((await (await fetch(`${gw.url}/health`)).json()) as object).toMatchObject({ status: 'ok', checks: { logWriter: { status: 'ok', queued: 0 } } })
})
