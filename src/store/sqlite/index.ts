// The SQLite implementation of the Store interface (gw's embedded default).

import type { Database } from 'bun:sqlite'
import { SecretBox, sealedFor } from '../../crypto/secret-box'
import type { Store } from '../types'
import { SqliteAuditStore } from './audit'
import { SqliteAuthStore } from './auth'
import { startCheckpointer } from './checkpointer'
import { SqliteKeyStore } from './keys'
import { SqliteLogStore } from './logs'
import { SqliteMcpStore } from './mcp'
import { cacheForLogWrites, openDatabase } from './open'
import { SqliteOrgStore } from './orgs'
import { SqlitePromptStore } from './prompts'
import { lazyReadThread } from './read-thread'
import { SqliteRouteStore } from './routes'
import { SqliteCacheWrites, SqliteResponseCache } from './response-cache'
import { SqliteSessionStore } from './sessions'
import { SqliteUserStore } from './users'

export function createSqliteStore(path: string, box: SecretBox): Store {
  const db = openDatabase(path)
  // Background writes (log batches and the response cache's puts they carry, last-used times) go through a second
  // connection that never waits for a lock: a locked or busy database makes them fail fast and retry
  // later, instead of stalling every request. An in-memory database has only the one connection.
  const writeDb = path === ':memory:' ? db : openDatabase(path, 0)
  if (writeDb !== db) cacheForLogWrites(writeDb)
  // WAL checkpoints (page copies and fsyncs) run on a worker thread, off the event loop.
  const checkpointer = path === ':memory:' ? undefined : startCheckpointer(path, [db, writeDb])
  // Log pages, stats and usage reports read on a thread of their own, off the event loop (started by the first such read).
  const reads = path === ':memory:' ? undefined : lazyReadThread(path, db)
  resealLegacySecrets(db, box)
  const keys = new SqliteKeyStore(db, writeDb)
  // The response cache's puts are written by the log thread with the log entries (its own SqliteCacheWrites);
  // these, on this thread, by an in-process log path (an in-memory database, or LogPath's fallback) and direct puts.
  const cacheWrites = new SqliteCacheWrites(writeDb)
  const cache = new SqliteResponseCache(db, cacheWrites, writeDb)
  return {
    kind: 'sqlite',
    orgs: new SqliteOrgStore(db, box),
    keys,
    auth: new SqliteAuthStore(db, box),
    prompts: new SqlitePromptStore(db),
    routes: new SqliteRouteStore(db),
    sessions: new SqliteSessionStore(db),
    users: new SqliteUserStore(db),
    audit: new SqliteAuditStore(db),
    mcp: new SqliteMcpStore(db, box),
    cache,
    logs: new SqliteLogStore(db, writeDb, reads, cacheWrites),
    ready: true,
    whenReady: Promise.resolve(),
    async ping() {
      db.query('SELECT 1').get()
    },
    async close() {
      await checkpointer?.stop()
      await reads?.stop()
      keys.flushTouches()
      if (writeDb !== db) writeDb.close()
      db.close()
    },
  }
}

/**
 * Rewrites secrets sealed in the v1 format (one SHA-256 of GW_SECRET, no associated data) as v2
 * (HKDF with a salt, bound to their row), in one transaction. A value that does not open (another
 * GW_SECRET) is left as it is and fails where it is used, with the same message as before.
 */
function resealLegacySecrets(db: Database, box: SecretBox): void {
  const tables = [
    {
      select: "SELECT org_id, provider AS name, api_key_enc AS enc FROM provider_keys WHERE api_key_enc LIKE 'v1:%'",
      update: 'UPDATE provider_keys SET api_key_enc = ?3 WHERE org_id = ?1 AND provider = ?2',
      bound: sealedFor.providerKey,
    },
    {
      select: "SELECT org_id, kid AS name, secret_enc AS enc FROM signing_secrets WHERE secret_enc LIKE 'v1:%'",
      update: 'UPDATE signing_secrets SET secret_enc = ?3 WHERE org_id = ?1 AND kid = ?2',
      bound: sealedFor.signingSecret,
    },
  ]
  db.transaction(() => {
    for (const t of tables) {
      const update = db.query<null, [string, string, string]>(t.update)
      for (const r of db.query<{ org_id: string; name: string; enc: string }, []>(t.select).all()) {
        if (!SecretBox.isLegacy(r.enc)) continue
        let plain: string
        try {
          plain = box.open(r.enc, '')
        } catch {
          continue
        }
        update.run(r.org_id, r.name, box.seal(plain, t.bound(r.org_id, r.name)))
      }
    }
  })()
}
