// Connects to PostgreSQL (Bun.SQL) and applies gw's migrations under an advisory lock, so instances started together never race.

import { SQL } from 'bun'
import schema from './migrations/0001_schema.sql' with { type: 'text' }
import usage from './migrations/0002_usage.sql' with { type: 'text' }
import routesAndKeyNames from './migrations/0003_routes_and_key_names.sql' with { type: 'text' }
import logTags from './migrations/0004_log_tags.sql' with { type: 'text' }
import usagePending from './migrations/0005_usage_pending.sql' with { type: 'text' }
import logFilters from './migrations/0006_log_filters.sql' with { type: 'text' }
import dashboardSessions from './migrations/0007_dashboard_sessions.sql' with { type: 'text' }
import promptSourceFile from './migrations/0008_prompt_source_file.sql' with { type: 'text' }
import { q } from './errors'

/** Every migration, in order; index + 1 is the version it brings the database to (the number its file name starts with). */
export const PG_MIGRATIONS: readonly string[] = [schema, usage, routesAndKeyNames, logTags, usagePending, logFilters, dashboardSessions, promptSourceFile]

/** Key of the session advisory lock held while migrating (any constant unique to gw). */
const MIGRATION_LOCK = 0x67770001

export function connect(url: string, max = 10): SQL {
  return new SQL(url, { max, idleTimeout: 30, connectionTimeout: 5 })
}

/**
 * Applies the migrations not yet recorded in `gw_migrations`, each in its own transaction, while
 * holding the advisory lock: a second instance waits for the first, then finds nothing to do.
 * Returns the versions applied by this call.
 */
export async function migratePostgres(sql: SQL): Promise<number[]> {
  const conn = await q(sql.reserve())
  try {
    await q(conn`SELECT pg_advisory_lock(${MIGRATION_LOCK})`)
    try {
      await q(conn`CREATE TABLE IF NOT EXISTS gw_migrations (version integer PRIMARY KEY, applied_at text NOT NULL)`)
      const done = new Set((await q(conn`SELECT version FROM gw_migrations`)).map((r: { version: number }) => r.version))
      const applied: number[] = []
      for (let v = 1; v <= PG_MIGRATIONS.length; v++) {
        if (done.has(v)) continue
        await q(
          conn.begin(async (tx) => {
            await tx.unsafe(PG_MIGRATIONS[v - 1] as string)
            await tx`INSERT INTO gw_migrations (version, applied_at) VALUES (${v}, ${new Date().toISOString()})`
          }),
        )
        applied.push(v)
      }
      return applied
    } finally {
      await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {})
    }
  } finally {
    conn.release()
  }
}
