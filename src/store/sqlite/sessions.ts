// SQLite storage of dashboard sessions: a hash of each session's id and its expiry; signing out deletes the row.

import type { Database } from 'bun:sqlite'
import type { SessionStore } from '../types'
import { insertOnce } from './errors'

export class SqliteSessionStore implements SessionStore {
  private readonly q

  constructor(db: Database) {
    this.q = {
      put: db.query<null, [string, number, string, string | null]>('INSERT INTO dashboard_sessions (id_hash, expires_at, created_at, user_id) VALUES (?1, ?2, ?3, ?4)'),
      get: db.query<{ expires_at: number; user_id: string | null }, [string, number]>('SELECT expires_at, user_id FROM dashboard_sessions WHERE id_hash = ?1 AND expires_at > ?2'),
      delete: db.query<null, [string]>('DELETE FROM dashboard_sessions WHERE id_hash = ?1'),
      prune: db.query<null, [number]>('DELETE FROM dashboard_sessions WHERE expires_at <= ?1'),
    }
  }

  async createSession(idHash: string, expiresAt: number, now: number, userId?: string): Promise<void> {
    this.q.prune.run(now)
    insertOnce('session', () => this.q.put.run(idHash, expiresAt, new Date(now).toISOString(), userId ?? null))
  }

  async session(idHash: string, now: number) {
    const row = this.q.get.get(idHash, now)
    return row ? { expiresAt: row.expires_at, userId: row.user_id ?? undefined } : undefined
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return this.q.delete.run(idHash).changes > 0
  }
}
