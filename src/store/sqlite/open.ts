// Opens the SQLite database (WAL, busy timeout, foreign keys) and applies pending migrations.

import { Database } from 'bun:sqlite'
import { closeSync, existsSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import { makePrivateFolder } from '../private-folder'
import core from './migrations/0001_core.sql' with { type: 'text' }
import auth from './migrations/0002_auth.sql' with { type: 'text' }
import prompts from './migrations/0003_prompts.sql' with { type: 'text' }
import usage from './migrations/0004_usage.sql' with { type: 'text' }
import routes from './migrations/0005_routes.sql' with { type: 'text' }
import providerKeyNames from './migrations/0006_provider_key_names.sql' with { type: 'text' }
import logFigures from './migrations/0007_log_figures.sql' with { type: 'text' }
import logFilters from './migrations/0008_log_filters.sql' with { type: 'text' }
import dashboardSessions from './migrations/0009_dashboard_sessions.sql' with { type: 'text' }
import promptSourceFile from './migrations/0010_prompt_source_file.sql' with { type: 'text' }
import compatProviders from './migrations/0011_compat_providers.sql' with { type: 'text' }
import mcp from './migrations/0012_mcp.sql' with { type: 'text' }
import responseCache from './migrations/0013_response_cache.sql' with { type: 'text' }
import people from './migrations/0014_people.sql' with { type: 'text' }
import responseCacheRowid from './migrations/0015_response_cache_rowid.sql' with { type: 'text' }
import logResponseIds from './migrations/0016_log_response_ids.sql' with { type: 'text' }

/** Every migration, in order; index + 1 is the schema version it brings the database to (the number its file name starts with). */
export const MIGRATIONS: readonly string[] = [core, auth, prompts, usage, routes, providerKeyNames, logFigures, logFilters, dashboardSessions, promptSourceFile, compatProviders, mcp, responseCache, people, responseCacheRowid, logResponseIds]

/** Bytes per page of a new database file (SQLite's default is 4,096). */
export const PAGE_SIZE = 16_384

/**
 * `busyTimeoutMs` is how long a statement waits for another connection's lock. bun:sqlite is
 * synchronous, so that wait blocks the event loop: the background writer uses 0 and retries.
 */
export function openDatabase(path: string, busyTimeoutMs = 1000): Database {
  if (path !== ':memory:' && !existsSync(path)) {
    // It will hold prompts, answers and encrypted keys: readable by its owner only (PRODUCT §4). SQLite
    // gives the -wal and -shm files the database file's mode.
    makePrivateFolder(dirname(path))
    closeSync(openSync(path, 'a', 0o600))
  }
  const db = new Database(path, { create: true, strict: true })
  // Only a new database takes it (an existing one keeps its page size until a VACUUM outside WAL mode).
  // 16 KiB pages: a batch of log entries dirties fewer pages, each a WAL frame (docs/benchmarks.md, "Log store").
  db.exec(`PRAGMA page_size = ${PAGE_SIZE}`)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  db.exec('PRAGMA foreign_keys = ON')
  migrate(db)
  return db
}

/** SQLite's page cache of a connection that writes log entries (its default is 2 MiB). */
const LOG_WRITER_CACHE_KIB = 16_384

/**
 * Gives a connection that writes log batches a page cache of LOG_WRITER_CACHE_KIB: a batch touches
 * index pages all over (end users, metadata tags), and with SQLite's 2 MiB most of them are read
 * again from the file at every batch (docs/benchmarks.md, "Log writer"). The memory is taken only as
 * pages are read, at most this much per connection.
 */
export function cacheForLogWrites(db: Database): void {
  db.exec(`PRAGMA cache_size = -${LOG_WRITER_CACHE_KIB}`)
}

/** Applies the migrations newer than `PRAGMA user_version`, each in its own transaction. */
export function migrate(db: Database): void {
  const row = db.query('PRAGMA user_version').get() as { user_version: number }
  for (let v = row.user_version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })()
  }
}
