// The SQLite implementation of the Store interface (gw's embedded default).

import type { SecretBox } from '../../crypto/secret-box'
import type { Store } from '../types'
import { SqliteAuthStore } from './auth'
import { startCheckpointer } from './checkpointer'
import { SqliteKeyStore } from './keys'
import { SqliteLogStore } from './logs'
import { openDatabase } from './open'
import { SqliteOrgStore } from './orgs'
import { SqlitePromptStore } from './prompts'
import { SqliteRouteStore } from './routes'

export function createSqliteStore(path: string, box: SecretBox): Store {
  const db = openDatabase(path)
  // Background writes (log batches, last-used times) go through a second connection that never
  // waits for a lock: a locked or busy database makes them fail fast and retry later, instead of
  // stalling every request. An in-memory database has only the one connection.
  const writeDb = path === ':memory:' ? db : openDatabase(path, 0)
  // WAL checkpoints (page copies and fsyncs) run on a worker thread, off the event loop.
  const checkpointer = path === ':memory:' ? undefined : startCheckpointer(path, [db, writeDb])
  const keys = new SqliteKeyStore(db, writeDb)
  return {
    kind: 'sqlite',
    orgs: new SqliteOrgStore(db, box),
    keys,
    auth: new SqliteAuthStore(db, box),
    prompts: new SqlitePromptStore(db),
    routes: new SqliteRouteStore(db),
    logs: new SqliteLogStore(db, writeDb),
    async close() {
      await checkpointer?.stop()
      keys.flushTouches()
      if (writeDb !== db) writeDb.close()
      db.close()
    },
  }
}
