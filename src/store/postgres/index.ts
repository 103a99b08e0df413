// The PostgreSQL implementation of the Store interface (several instances, one database; PRODUCT §10).

import type { SecretBox } from '../../crypto/secret-box'
import type { Store } from '../types'
import { PgAuditStore } from './audit'
import { PgAuthStore } from './auth'
import { q } from './errors'
import { PgKeyStore } from './keys'
import { PgLogStore } from './logs'
import { PgMcpStore } from './mcp'
import { connect, connectionFailure, migratePostgres } from './open'
import { PgOrgStore } from './orgs'
import { PgPromptStore } from './prompts'
import { PgRouteStore } from './routes'
import { PgResponseCache } from './response-cache'
import { PgSessionStore } from './sessions'
import { PgUserStore } from './users'

/**
 * Connects and migrates in the background: a database down at start is retried every second, and
 * `ready` turns true once migrations are done (GET /health/ready). A failure retrying cannot fix (no
 * such database, a refused login) rejects `whenReady` instead; `onRetry` gets errors naming host:port.
 */
export function createPostgresStore(url: string, box: SecretBox, opts: { onRetry?: (err: unknown) => void } = {}): Store {
  const sql = connect(url)
  const keys = new PgKeyStore(sql)
  let ready = false
  let closed = false
  const whenReady = (async () => {
    for (;;) {
      try {
        await migratePostgres(sql)
        ready = true
        return
      } catch (err) {
        if (closed) throw new Error('store closed before the database was reached')
        const failure = connectionFailure(url, err)
        if (failure.permanent) throw new Error(failure.message)
        opts.onRetry?.(new Error(failure.message, { cause: err }))
        await Bun.sleep(1000)
      }
    }
  })()
  whenReady.catch(() => {})
  return {
    kind: 'postgres',
    orgs: new PgOrgStore(sql, box),
    keys,
    auth: new PgAuthStore(sql, box),
    prompts: new PgPromptStore(sql),
    routes: new PgRouteStore(sql),
    sessions: new PgSessionStore(sql),
    users: new PgUserStore(sql),
    audit: new PgAuditStore(sql),
    mcp: new PgMcpStore(sql, box),
    cache: new PgResponseCache(sql),
    logs: new PgLogStore(sql, () => ready),
    get ready() {
      return ready
    },
    whenReady,
    async ping() {
      await q(sql`SELECT 1`)
    },
    async close() {
      closed = true
      await keys.flushTouches()
      await sql.close({ timeout: 5 })
    },
  }
}
