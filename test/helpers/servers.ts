// The PostgreSQL and Redis servers tests use (GW_TEST_DATABASE_URL / GW_TEST_REDIS_URL, default the local ones), fresh schemas, and the skip rule.

import { SQL } from 'bun'

export const TEST_DATABASE_URL = process.env.GW_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const TEST_REDIS_URL = process.env.GW_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
/** `GW_TEST_STORE=postgres` runs the store and end-to-end suites on PostgreSQL (the second leg of the matrix). */
export const TEST_STORE: 'sqlite' | 'postgres' = process.env.GW_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite'
/** Set by the PostgreSQL leg when Redis answers too: its gateways then share counters and notices over Redis. */
export const TEST_WITH_REDIS = process.env.GW_TEST_WITH_REDIS === '1'
export const TEST_SECRET = 'test-secret-shared-by-every-instance'

async function reachable(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await Promise.race([check(), Bun.sleep(2000).then(() => Promise.reject(new Error('timeout')))])
    return true
  } catch {
    return false
  }
}

export const postgresReachable = (url = TEST_DATABASE_URL) =>
  reachable(async () => {
    const sql = new SQL(url, { max: 1, connectionTimeout: 2 })
    try {
      await sql`SELECT 1`
    } finally {
      await sql.close()
    }
  })

export const redisReachable = (url = TEST_REDIS_URL) =>
  reachable(async () => {
    const client = new Bun.RedisClient(url, { connectionTimeout: 2000, autoReconnect: false })
    try {
      await client.send('PING', [])
    } finally {
      client.close()
    }
  })

/**
 * Whether a suite needing these servers runs: when they answer. When they do not, it says so in one
 * line and is skipped, except under CI=true, where it fails (CI has both servers).
 */
export async function serversFor(suite: string, need: { postgres?: boolean; redis?: boolean }): Promise<boolean> {
  const missing: string[] = []
  if (need.postgres && !(await postgresReachable())) missing.push(`PostgreSQL at ${TEST_DATABASE_URL}`)
  if (need.redis && !(await redisReachable())) missing.push(`Redis at ${TEST_REDIS_URL}`)
  if (!missing.length) return true
  if (process.env.CI === 'true') throw new Error(`${suite}: ${missing.join(' and ')} unreachable, and CI requires them`)
  console.log(`skipped: ${suite} (${missing.join(' and ')} unreachable)`)
  return false
}

/** A URL with `search_path` set on every connection. */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url)
  u.searchParams.set('search_path', schema)
  return u.toString()
}

/** A fresh, empty schema in the test database, as a GW_DATABASE_URL; `drop` removes it. */
export async function freshSchema(): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const schema = `gw_test_${Bun.randomUUIDv7().replaceAll('-', '').slice(-16)}`
  const admin = new SQL(TEST_DATABASE_URL, { max: 1 })
  await admin.unsafe(`CREATE SCHEMA ${schema}`)
  await admin.close()
  return {
    url: withSearchPath(TEST_DATABASE_URL, schema),
    schema,
    async drop() {
      const sql = new SQL(TEST_DATABASE_URL, { max: 1 })
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await sql.close()
    },
  }
}
