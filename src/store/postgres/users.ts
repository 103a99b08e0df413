// PostgreSQL storage of users (roles, orgs, Argon2id password hashes), personal admin tokens (hashes only) and first-sign-in links.

import type { SQL } from 'bun'
import type { AdminTokenRecord, Role, User } from '../../domain/people'
import { type AdminTokenRow, toAdminToken, toUser, type UserRow } from '../rows'
import type { UserStore } from '../types'
import { q } from './errors'

export class PgUserStore implements UserStore {
  constructor(private readonly sql: SQL) {}

  async createUser(rec: { id: string; email: string; name: string | undefined; role: Role; orgs: string[] }): Promise<User> {
    const at = new Date().toISOString()
    const [row] = await q<UserRow[]>(
      this.sql`INSERT INTO users (id, email, name, role, orgs, created_at, updated_at)
               VALUES (${rec.id}, ${rec.email.toLowerCase()}, ${rec.name ?? null}, ${rec.role}, ${JSON.stringify(rec.orgs)}::jsonb, ${at}, ${at}) RETURNING *`,
      `user "${rec.email}"`,
    )
    if (!row) throw new Error('insert returned nothing')
    return toUser(row)
  }

  async getUser(id: string) {
    const [row] = await q<UserRow[]>(this.sql`SELECT * FROM users WHERE id = ${id}`)
    return row ? toUser(row) : undefined
  }

  async userByEmail(email: string) {
    const [row] = await q<UserRow[]>(this.sql`SELECT * FROM users WHERE email = ${email.toLowerCase()}`)
    return row ? toUser(row) : undefined
  }

  async listUsers() {
    return (await q<UserRow[]>(this.sql`SELECT * FROM users ORDER BY email`)).map(toUser)
  }

  async updateUser(id: string, patch: { name?: string | null; role?: Role; orgs?: string[] }) {
    const [row] = await q<UserRow[]>(
      this.sql`UPDATE users SET
                 name = CASE WHEN ${patch.name !== undefined} THEN ${patch.name ?? null} ELSE name END,
                 role = coalesce(${patch.role ?? null}, role),
                 orgs = coalesce(${patch.orgs ? JSON.stringify(patch.orgs) : null}::jsonb, orgs),
                 updated_at = ${new Date().toISOString()}
               WHERE id = ${id} RETURNING *`,
    )
    return row ? toUser(row) : undefined
  }

  async deleteUser(id: string) {
    return (await q(this.sql`DELETE FROM users WHERE id = ${id}`)).count > 0
  }

  async setPasswordHash(id: string, hash: string | undefined) {
    return (await q(this.sql`UPDATE users SET password_hash = ${hash ?? null}, updated_at = ${new Date().toISOString()} WHERE id = ${id}`)).count > 0
  }

  async passwordHash(id: string) {
    const [row] = await q<{ password_hash: string | null }[]>(this.sql`SELECT password_hash FROM users WHERE id = ${id}`)
    return row?.password_hash ?? undefined
  }

  async createAdminToken(rec: Omit<AdminTokenRecord, 'createdAt' | 'lastUsedAt'>) {
    const [row] = await q<AdminTokenRow[]>(
      this.sql`INSERT INTO admin_tokens (id, user_id, name, token_hash, created_at)
               VALUES (${rec.id}, ${rec.userId}, ${rec.name ?? null}, ${Buffer.from(rec.hash)}, ${new Date().toISOString()}) RETURNING *`,
      `admin token "${rec.id}"`,
    )
    if (!row) throw new Error('insert returned nothing')
    return toAdminToken(row)
  }

  async getAdminToken(id: string) {
    const [row] = await q<AdminTokenRow[]>(this.sql`SELECT * FROM admin_tokens WHERE id = ${id}`)
    return row ? toAdminToken(row) : undefined
  }

  async listAdminTokens(userId: string) {
    return (await q<AdminTokenRow[]>(this.sql`SELECT * FROM admin_tokens WHERE user_id = ${userId} ORDER BY created_at, id`)).map(toAdminToken)
  }

  async deleteAdminToken(userId: string, id: string) {
    return (await q<{ id: string }[]>(this.sql`DELETE FROM admin_tokens WHERE user_id = ${userId} AND id = ${id} RETURNING id`)).length > 0
  }

  async touchAdminToken(id: string, at: string) {
    await q(this.sql`UPDATE admin_tokens SET last_used_at = ${at} WHERE id = ${id}`)
  }

  async putSignInLink(linkHash: string, userId: string, expiresAt: number) {
    await q(this.sql`DELETE FROM sign_in_links WHERE expires_at <= ${Date.now()}`)
    await q(this.sql`INSERT INTO sign_in_links (link_hash, user_id, expires_at) VALUES (${linkHash}, ${userId}, ${expiresAt})`)
  }

  async takeSignInLink(linkHash: string, now: number) {
    const [row] = await q<{ user_id: string; expires_at: string | number }[]>(
      this.sql`DELETE FROM sign_in_links WHERE link_hash = ${linkHash} RETURNING user_id, expires_at`,
    )
    return row && Number(row.expires_at) > now ? row.user_id : undefined
  }
}
