// PostgreSQL storage of dashboard sessions: a hash of each session's id and its expiry, shared by every instance; signing out deletes the row.

import type { SQL } from 'bun'
import type { SessionStore } from '../types'
import { q } from './errors'

export class PgSessionStore implements SessionStore {
  constructor(private readonly sql: SQL) {}

  async createSession(idHash: string, expiresAt: number, now: number, userId?: string): Promise<void> {
    await q(this.sql`DELETE FROM dashboard_sessions WHERE expires_at <= ${now}`)
    await q(
      this.sql`INSERT INTO dashboard_sessions (id_hash, expires_at, created_at, user_id) VALUES (${idHash}, ${expiresAt}, ${new Date(now).toISOString()}, ${userId ?? null})`,
      'session',
    )
  }

  async session(idHash: string, now: number) {
    const [row] = await q<{ expires_at: string | number; user_id: string | null }[]>(
      this.sql`SELECT expires_at, user_id FROM dashboard_sessions WHERE id_hash = ${idHash} AND expires_at > ${now}`,
    )
    return row ? { expiresAt: Number(row.expires_at), userId: row.user_id ?? undefined } : undefined
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM dashboard_sessions WHERE id_hash = ${idHash}`)).count > 0
  }
}
