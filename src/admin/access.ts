// Who is calling the admin API and what its role lets it do (PRODUCT §18): the one check every admin route runs.

import { GatewayError } from '../errors'
import type { Actor, User } from '../domain/people'

/** The admin token (the break-glass owner), or a user through a dashboard session or a personal admin token. */
export type Principal = { kind: 'admin-token' } | { kind: 'user'; user: User }

/**
 * What an admin operation needs: `read` (an org's settings, logs, usage: any role in the org), `change`
 * (an owner, or an admin of the org), `owner` (users, new orgs, server-wide changes), `self` (an owner,
 * or the user the path names).
 */
export type Access = 'read' | 'change' | 'owner' | 'self'

export const actorOf = (p: Principal): Actor => (p.kind === 'admin-token' ? { kind: 'admin-token' } : { kind: 'user', id: p.user.id, email: p.user.email })

export const isOwner = (p: Principal) => p.kind === 'admin-token' || p.user.role === 'owner'

/** The orgs the caller acts in; undefined: every org (an owner). */
export const orgsOf = (p: Principal): readonly string[] | undefined => (isOwner(p) || p.kind !== 'user' ? undefined : p.user.orgs)

const forbidden = (message: string) => new GatewayError(403, 'forbidden', message)

/** Throws 403 `forbidden` unless the caller may run an operation needing `access` with these path parameters. */
export function authorize(p: Principal, access: Access, params: Record<string, string>): void {
  if (isOwner(p) || p.kind !== 'user') return
  const { user } = p
  if (access === 'owner') throw forbidden(`Only an owner may do this (you are ${article(user.role)} ${user.role})`)
  if (access === 'self') {
    if (params.id !== user.id) throw forbidden('Only an owner may do this for another user')
    return
  }
  const org = params.org
  if (org !== undefined && !user.orgs.includes(org)) throw forbidden(`You have no role in org "${org.slice(0, 64)}"`)
  if (access === 'change' && (user.role !== 'admin' || org === undefined))
    throw forbidden(user.role === 'viewer' ? 'A viewer changes nothing' : 'Only an owner may do this')
}

const article = (role: string) => (role === 'admin' ? 'an' : 'a')
