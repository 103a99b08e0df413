// User administration (PRODUCT §18): users and roles, personal admin tokens, passwords and first-sign-in links; shared by HTTP and CLI.

import { randomBytes } from 'node:crypto'
import { adminTokenId, newAdminToken } from '../auth/admin-tokens'
import { keyMatches } from '../auth/service-keys'
import type { User } from '../domain/people'
import { badRequest, echo, GatewayError, notFound } from '../errors'
import { checkAdminTokenBody, checkPasswordBody, checkUserBody, checkUserPatchBody } from '../schemas/people-bodies'
import type { Store } from '../store/types'
import type { AuditLog } from './audit'

/** A first-sign-in link works this long, once. */
export const SIGN_IN_LINK_TTL_MS = 24 * 3_600_000

/** A personal token's last use is noted at most this often (one write per minute of use, not per call). */
const TOUCH_EVERY_MS = 60_000

export const publicUser = (u: User) => ({
  id: u.id,
  email: u.email,
  name: u.name ?? null,
  role: u.role,
  orgs: u.role === 'owner' ? [] : u.orgs,
  hasPassword: u.hasPassword,
  createdAt: u.createdAt,
  updatedAt: u.updatedAt,
})

const linkHash = (link: string) => Buffer.from(Bun.SHA256.hash(link) as Uint8Array).toString('base64url')

export class UserAdmin {
  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
  ) {}

  byEmail(email: string): Promise<User | undefined> {
    return this.store.users.userByEmail(email)
  }

  get(id: string): Promise<User | undefined> {
    return this.store.users.getUser(id)
  }

  async requireUser(id: string): Promise<User> {
    const u = await this.store.users.getUser(id)
    if (!u) throw notFound(`User ${echo(id)} not found`)
    return u
  }

  /** A user named by id or email (the CLI takes either). */
  async findUser(idOrEmail: string): Promise<User> {
    const u = idOrEmail.includes('@') ? await this.store.users.userByEmail(idOrEmail) : await this.store.users.getUser(idOrEmail)
    if (!u) throw notFound(`User ${echo(idOrEmail)} not found`)
    return u
  }

  private async checkOrgs(orgs: string[]): Promise<void> {
    for (const org of orgs) if (!(await this.store.orgs.getOrg(org))) throw badRequest(`Invalid orgs: org ${echo(org)} does not exist`)
  }

  async create(raw: unknown) {
    const body = checkUserBody(raw)
    const orgs = [...new Set(body.orgs ?? [])]
    await this.checkOrgs(orgs)
    if (await this.store.users.userByEmail(body.email)) throw new GatewayError(409, 'gateway_error', `A user with email ${echo(body.email)} already exists`)
    const user = await this.store.users.createUser({ id: `u_${randomBytes(9).toString('base64url')}`, email: body.email, name: body.name, role: body.role, orgs })
    const after = publicUser(user)
    await this.audit.record({ action: 'user.create', org: null, target: `user:${user.id}`, before: null, after })
    return after
  }

  async list() {
    return { data: (await this.store.users.listUsers()).map(publicUser) }
  }

  async describe(id: string) {
    const u = await this.requireUser(id)
    const tokens = await this.store.users.listAdminTokens(id)
    return { ...publicUser(u), tokens: tokens.map((t) => ({ id: t.id, name: t.name ?? null, createdAt: t.createdAt, lastUsedAt: t.lastUsedAt ?? null })) }
  }

  async update(id: string, raw: unknown) {
    const before = await this.requireUser(id)
    const patch = checkUserPatchBody(raw)
    if (patch.orgs) await this.checkOrgs(patch.orgs)
    const user = await this.store.users.updateUser(id, { ...patch, ...(patch.orgs ? { orgs: [...new Set(patch.orgs)] } : {}) })
    if (!user) throw notFound(`User ${echo(id)} not found`)
    const after = publicUser(user)
    await this.audit.record({ action: 'user.update', org: null, target: `user:${id}`, before: publicUser(before), after })
    return after
  }

  /** Removes the user; its personal tokens, sessions and links go with it. */
  async remove(id: string): Promise<void> {
    const before = await this.requireUser(id)
    if (!(await this.store.users.deleteUser(id))) throw notFound(`User ${echo(id)} not found`)
    await this.audit.record({ action: 'user.delete', org: null, target: `user:${id}`, before: publicUser(before), after: null })
  }

  async createToken(id: string, raw: unknown = {}): Promise<{ id: string; token: string; userId: string }> {
    await this.requireUser(id)
    const body = checkAdminTokenBody(raw)
    const { id: tokenId, token, hash } = newAdminToken()
    const rec = await this.store.users.createAdminToken({ id: tokenId, userId: id, name: body.name, hash })
    await this.audit.record({ action: 'user.token.create', org: null, target: `user:${id}/token:${tokenId}`, before: null, after: { id: rec.id, name: rec.name ?? null } })
    return { id: tokenId, token, userId: id }
  }

  /** Revokes one of the user's personal tokens: it is 401 from its next request on. */
  async revokeToken(id: string, tokenId: string): Promise<void> {
    await this.requireUser(id)
    const rec = await this.store.users.getAdminToken(tokenId)
    // Deleted only through its own user: another user's token is not found here.
    if (!rec || !(await this.store.users.deleteAdminToken(id, tokenId))) throw notFound(`User ${echo(id)} has no token ${echo(tokenId)}`)
    await this.audit.record({ action: 'user.token.delete', org: null, target: `user:${id}/token:${tokenId}`, before: { id: rec.id, name: rec.name ?? null }, after: null })
  }

  /** The user a personal admin token acts for; undefined when it is not one, or its user is gone. Notes its use (to the minute). */
  async userOfToken(token: string): Promise<User | undefined> {
    const id = adminTokenId(token)
    const rec = id && (await this.store.users.getAdminToken(id))
    if (!rec || !keyMatches(token, rec.hash)) return undefined
    const now = Date.now()
    if (rec.lastUsedAt === undefined || now - Date.parse(rec.lastUsedAt) >= TOUCH_EVERY_MS)
      // Best effort: a store that cannot note it does not refuse the caller.
      await this.store.users.touchAdminToken(rec.id, new Date(now).toISOString()).catch(() => {})
    return this.store.users.getUser(rec.userId)
  }

  /** Stores the password as an Argon2id hash (Bun.password). */
  async setPassword(id: string, raw: unknown): Promise<void> {
    const user = await this.requireUser(id)
    const { password } = checkPasswordBody(raw)
    const hash = await Bun.password.hash(password, { algorithm: 'argon2id' })
    await this.store.users.setPasswordHash(id, hash)
    await this.audit.record({ action: 'user.password.set', org: null, target: `user:${id}`, before: { hasPassword: user.hasPassword }, after: { hasPassword: true } })
  }

  /** The user whose email and password these are; undefined otherwise (the same work either way). */
  async checkPassword(email: string, password: string): Promise<User | undefined> {
    const user = await this.store.users.userByEmail(email)
    const hash = user && (await this.store.users.passwordHash(user.id))
    // Without a user, verify against a hash of nothing anyway, so timing does not tell who exists.
    const ok = await Bun.password.verify(password, hash ?? (await dummyHash())).catch(() => false)
    return ok && hash ? user : undefined
  }

  /** A one-time first-sign-in secret for the user (the CLI prints the link). */
  async signInLink(id: string, now = Date.now()): Promise<{ secret: string; expiresAt: string }> {
    await this.requireUser(id)
    const secret = randomBytes(24).toString('base64url')
    await this.store.users.putSignInLink(linkHash(secret), id, now + SIGN_IN_LINK_TTL_MS)
    await this.audit.record({ action: 'user.sign-in-link.create', org: null, target: `user:${id}`, before: null, after: { expiresAt: new Date(now + SIGN_IN_LINK_TTL_MS).toISOString() } })
    return { secret, expiresAt: new Date(now + SIGN_IN_LINK_TTL_MS).toISOString() }
  }

  /** The user a first-sign-in link signs in, once; undefined when unknown, used or expired. */
  async useSignInLink(secret: string, now = Date.now()): Promise<User | undefined> {
    const id = await this.store.users.takeSignInLink(linkHash(secret), now)
    return id === undefined ? undefined : this.store.users.getUser(id)
  }
}

let dummy: Promise<string> | undefined
const dummyHash = () => (dummy ??= Bun.password.hash('gw: no such user', { algorithm: 'argon2id' }))
