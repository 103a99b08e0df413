// SQLite storage of users (roles, orgs, Argon2id password hashes), personal admin tokens (hashes only) and first-sign-in links.

import type { Database } from 'bun:sqlite'
import type { AdminTokenRecord, Role, User } from '../../domain/people'
import { type AdminTokenRow, toAdminToken, toUser, type UserRow } from '../rows'
import type { UserStore } from '../types'
import { insertOnce } from './errors'

export class SqliteUserStore implements UserStore {
  private readonly q

  constructor(private readonly db: Database) {
    this.q = {
      insert: db.query<UserRow, [string, string, string | null, string, string, string]>(
        'INSERT INTO users (id, email, name, role, orgs, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING *',
      ),
      get: db.query<UserRow, [string]>('SELECT * FROM users WHERE id = ?1'),
      byEmail: db.query<UserRow, [string]>('SELECT * FROM users WHERE email = ?1'),
      list: db.query<UserRow, []>('SELECT * FROM users ORDER BY email'),
      delete: db.query<null, [string]>('DELETE FROM users WHERE id = ?1'),
      setPassword: db.query<null, [string, string | null, string]>('UPDATE users SET password_hash = ?2, updated_at = ?3 WHERE id = ?1'),
      password: db.query<{ password_hash: string | null }, [string]>('SELECT password_hash FROM users WHERE id = ?1'),
      insertToken: db.query<AdminTokenRow, [string, string, string | null, Uint8Array, string]>(
        'INSERT INTO admin_tokens (id, user_id, name, token_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING *',
      ),
      token: db.query<AdminTokenRow, [string]>('SELECT * FROM admin_tokens WHERE id = ?1'),
      tokens: db.query<AdminTokenRow, [string]>('SELECT * FROM admin_tokens WHERE user_id = ?1 ORDER BY created_at, id'),
      deleteToken: db.query<null, [string, string]>('DELETE FROM admin_tokens WHERE user_id = ?1 AND id = ?2'),
      touchToken: db.query<null, [string, string]>('UPDATE admin_tokens SET last_used_at = ?2 WHERE id = ?1'),
      putLink: db.query<null, [string, string, number]>('INSERT INTO sign_in_links (link_hash, user_id, expires_at) VALUES (?1, ?2, ?3)'),
      takeLink: db.query<{ user_id: string; expires_at: number }, [string]>('DELETE FROM sign_in_links WHERE link_hash = ?1 RETURNING user_id, expires_at'),
      pruneLinks: db.query<null, [number]>('DELETE FROM sign_in_links WHERE expires_at <= ?1'),
    }
  }

  async createUser(rec: { id: string; email: string; name: string | undefined; role: Role; orgs: string[] }): Promise<User> {
    const row = insertOnce(`user "${rec.email}"`, () =>
      this.q.insert.get(rec.id, rec.email.toLowerCase(), rec.name ?? null, rec.role, JSON.stringify(rec.orgs), new Date().toISOString()),
    )
    if (!row) throw new Error('insert returned nothing')
    return toUser(row)
  }

  async getUser(id: string) {
    const row = this.q.get.get(id)
    return row ? toUser(row) : undefined
  }

  async userByEmail(email: string) {
    const row = this.q.byEmail.get(email.toLowerCase())
    return row ? toUser(row) : undefined
  }

  async listUsers() {
    return this.q.list.all().map(toUser)
  }

  async updateUser(id: string, patch: { name?: string | null; role?: Role; orgs?: string[] }) {
    const sets: string[] = []
    const values: (string | null)[] = [id]
    const set = (column: string, value: string | null) => {
      values.push(value)
      sets.push(`${column} = ?${values.length}`)
    }
    if (patch.name !== undefined) set('name', patch.name)
    if (patch.role !== undefined) set('role', patch.role)
    if (patch.orgs !== undefined) set('orgs', JSON.stringify(patch.orgs))
    set('updated_at', new Date().toISOString())
    const row = this.db.query<UserRow, (string | null)[]>(`UPDATE users SET ${sets.join(', ')} WHERE id = ?1 RETURNING *`).get(...values)
    return row ? toUser(row) : undefined
  }

  async deleteUser(id: string) {
    return this.q.delete.run(id).changes > 0
  }

  async setPasswordHash(id: string, hash: string | undefined) {
    return this.q.setPassword.run(id, hash ?? null, new Date().toISOString()).changes > 0
  }

  async passwordHash(id: string) {
    return this.q.password.get(id)?.password_hash ?? undefined
  }

  async createAdminToken(rec: Omit<AdminTokenRecord, 'createdAt' | 'lastUsedAt'>) {
    const row = insertOnce(`admin token "${rec.id}"`, () => this.q.insertToken.get(rec.id, rec.userId, rec.name ?? null, rec.hash, new Date().toISOString()))
    if (!row) throw new Error('insert returned nothing')
    return toAdminToken(row)
  }

  async getAdminToken(id: string) {
    const row = this.q.token.get(id)
    return row ? toAdminToken(row) : undefined
  }

  async listAdminTokens(userId: string) {
    return this.q.tokens.all(userId).map(toAdminToken)
  }

  async deleteAdminToken(userId: string, id: string) {
    return this.q.deleteToken.run(userId, id).changes > 0
  }

  async touchAdminToken(id: string, at: string) {
    this.q.touchToken.run(id, at)
  }

  async putSignInLink(linkHash: string, userId: string, expiresAt: number) {
    this.q.pruneLinks.run(Date.now())
    this.q.putLink.run(linkHash, userId, expiresAt)
  }

  async takeSignInLink(linkHash: string, now: number) {
    const row = this.q.takeLink.get(linkHash)
    return row && row.expires_at > now ? row.user_id : undefined
  }
}
