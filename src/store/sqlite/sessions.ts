// SQLite storage of dashboard sessions: a hash of each session's id and its expiry; signing out deletes the row.

import type { Database } from 'bun:sqlite'
import type { SessionStore } from '../types'
import { insertOnce } from './errors'

export class SqliteSessionStore implements SessionStore {
  private readonly q

  constructor(db: Database) {
    this.q = {
      put: db.query<null, [string, number, string]>('INSERT INTO dashboard_sessions (id_hash, expires_at, created_at) VALUES (?1, ?2, ?3)'),
      get: db.query<{ expires_at: number }, [string, number]>('SELECT expires_at FROM dashboard_sessions WHERE id_hash = ?1 AND expires_at > ?2'),
      delete: db.query<null, [string]>('DELETE FROM dashboard_sessions WHERE id_hash = ?1'),
      prune: db.query<null, [number]>('DELETE FROM dashboard_sessions WHERE expires_at <= ?1'),
    }
  }

  async createSession(idHash: string, expiresAt: number, now: number): Promise<void> {
    this.q.prune.run(now)
    insertOnce('session', () => this.q.put.run(idHash, expiresAt, new Date(now).toISOString()))
  }

  async sessionExpiry(idHash: string, now: number): Promise<number | undefined> {
    return this.q.get.get(idHash, now)?.expires_at
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return this.q.delete.run(idHash).changes > 0
  }
}
