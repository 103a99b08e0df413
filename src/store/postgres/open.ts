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
import compatProviders from './migrations/0009_compat_providers.sql' with { type: 'text' }
import mcp from './migrations/0010_mcp.sql' with { type: 'text' }
import responseCache from './migrations/0011_response_cache.sql' with { type: 'text' }
import people from './migrations/0012_people.sql' with { type: 'text' }
import logResponseIds from './migrations/0013_log_response_ids.sql' with { type: 'text' }
import { q } from './errors'

/** Every migration, in order; index + 1 is the version it brings the database to (the number its file name starts with). */
export const PG_MIGRATIONS: readonly string[] = [schema, usage, routesAndKeyNames, logTags, usagePending, logFilters, dashboardSessions, promptSourceFile, compatProviders, mcp, responseCache, people, logResponseIds]

/** Key of the session advisory lock held while migrating (any constant unique to gw). */
const MIGRATION_LOCK = 0x67770001

/** Where a GW_DATABASE_URL points, for messages and the start-up lines: never its user or password. */
export function databaseTarget(url: string): { hostPort: string; database: string } {
  try {
    const u = new URL(url)
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    return { hostPort: `${host}:${u.port || '5432'}`, database: decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres' }
  } catch {
    return { hostPort: '(invalid URL)', database: '' }
  }
}

/** SQLSTATEs of a connection that retrying cannot fix: no such database, a refused login. */
const PERMANENT: Record<string, string> = {
  '3D000': 'does not exist',
  '28P01': 'refused the password',
  '28000': 'refused the login',
}

/**
 * A failure to connect, described with the server's host:port and database (Bun.SQL says only
 * "Failed to connect"), and whether retrying can help.
 */
export function connectionFailure(url: string, err: unknown): { message: string; permanent: boolean } {
  const { hostPort, database } = databaseTarget(url)
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err
  const why = cause instanceof Error ? cause.message : String(cause)
  const sqlState = (cause as { errno?: unknown } | undefined)?.errno
  const permanent = typeof sqlState === 'string' ? PERMANENT[sqlState] : undefined
  if (sqlState === '3D000')
    return { message: `the PostgreSQL database "${database}" does not exist on ${hostPort}: create it, or correct GW_DATABASE_URL`, permanent: true }
  if (permanent) return { message: `PostgreSQL on ${hostPort} ${permanent} for database "${database}" (${why}): correct GW_DATABASE_URL`, permanent: true }
  return { message: `PostgreSQL on ${hostPort} (database "${database}"): ${why}`, permanent: false }
}

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
