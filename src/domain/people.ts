// People (PRODUCT §18): users with a role scoped to orgs, their personal admin tokens, and audit log entries.

export const ROLES = ['owner', 'admin', 'viewer'] as const
export type Role = (typeof ROLES)[number]

export interface User {
  id: string
  /** Lowercased; names the user at sign-in (a password, or the verified `email` of single sign-on). */
  email: string
  name: string | undefined
  role: Role
  /** The orgs an admin or viewer acts in; an owner acts in every org whatever this holds. */
  orgs: string[]
  /** Whether a password is set (its Argon2id hash never leaves the store's user record). */
  hasPassword: boolean
  createdAt: string
  updatedAt: string
}

/** A personal admin token (`gw_at_…`): acts with its user's role; deleted with its user. */
export interface AdminTokenRecord {
  id: string
  userId: string
  name: string | undefined
  /** SHA-256 of the full token. */
  hash: Uint8Array
  createdAt: string
  lastUsedAt: string | undefined
}

/** Who made a change: a user (session or personal token), the admin token, the CLI, or a config file. */
export interface Actor {
  kind: 'user' | 'admin-token' | 'cli' | 'config-file'
  id?: string
  email?: string
}

/** One change of state, appended once and never changed (PRODUCT §18). */
export interface AuditEntry {
  id: string
  time: string
  actor: Actor
  action: string
  org: string | null
  target: string
  before: unknown
  after: unknown
  requestId: string | null
  ip: string | null
}
