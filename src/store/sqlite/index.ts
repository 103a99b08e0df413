// The SQLite implementation of the Store interface (gw's embedded default).

import type { SecretBox } from '../../crypto/secret-box'
import type { Store } from '../types'
import { SqliteAuthStore } from './auth'
import { SqliteKeyStore } from './keys'
import { SqliteLogStore } from './logs'
import { openDatabase } from './open'
import { SqliteOrgStore } from './orgs'
import { SqlitePromptStore } from './prompts'

export function createSqliteStore(path: string, box: SecretBox): Store {
  const db = openDatabase(path)
  const keys = new SqliteKeyStore(db)
  return {
    kind: 'sqlite',
    orgs: new SqliteOrgStore(db, box),
    keys,
    auth: new SqliteAuthStore(db, box),
    prompts: new SqlitePromptStore(db),
    logs: new SqliteLogStore(db),
    async close() {
      keys.flushTouches()
      db.close()
    },
  }
}
