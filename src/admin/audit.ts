// The audit log's writer (PRODUCT §18): who is changing state (the change context every admin route, the CLI
// and the config-file loader run their changes in) and the one entry each change appends, secrets masked.

import { AsyncLocalStorage } from 'node:async_hooks'
import type { Actor, AuditEntry } from '../domain/people'
import type { AuditStore } from '../store/types'

/** Who is making the changes of the code running inside it, and for which request. */
export interface ChangeContext {
  actor: Actor
  requestId: string | null
  ip: string | null
  /** Entries this context has appended (the admin routes append a generic one for a change that appended none). */
  recorded: number
}

const contexts = new AsyncLocalStorage<ChangeContext>()

/** Runs `fn` with its changes recorded as made by `actor` (for `requestId` from `ip`, on the admin API). */
export function asActor<T>(actor: Actor, fn: () => T, request: { requestId?: string | null; ip?: string | null } = {}): T {
  return contexts.run({ actor, requestId: request.requestId ?? null, ip: request.ip ?? null, recorded: 0 }, fn)
}

export const currentChange = (): ChangeContext | undefined => contexts.getStore()

/** Field names whose string values are secrets: masked wherever they appear in an entry. */
const SECRET_FIELD = /^(api[-_]?key|key|secret|secrets|password|token|client[-_]?secret|secret[-_]?access[-_]?key|session[-_]?token|service[-_]?account[-_]?key|authorization)$/i

/** A value with every secret-named field's string masked (a masked one, `sk-…1234`, stays as it is). */
export function maskSecrets(value: unknown, depth = 0): unknown {
  if (depth > 32 || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    if (SECRET_FIELD.test(k) && typeof v === 'string') out[k] = v.includes('…') || v === '****' ? v : '****'
    else if (SECRET_FIELD.test(k) && v !== null && typeof v === 'object') out[k] = '****'
    else out[k] = maskSecrets(v, depth + 1)
  }
  return out
}

export interface Change {
  /** `<resource>.<verb>`, e.g. `policy.set`, `service-key.revoke` (docs/auth.md lists them). */
  action: string
  org: string | null
  /** What changed, within the org: `service-key:sk_…`, `route:fast`, `user:u_…`. */
  target: string
  before: unknown
  after: unknown
}

/**
 * Appends one entry per change. Outside any change context (a test driving AdminService itself) the
 * actor is the CLI: every server-side path (admin routes, config file, prompt files) sets its own.
 */
export class AuditLog {
  constructor(private readonly store: AuditStore) {}

  async record(change: Change): Promise<void> {
    const ctx = contexts.getStore()
    const entry: AuditEntry = {
      id: Bun.randomUUIDv7(),
      time: new Date().toISOString(),
      actor: ctx?.actor ?? { kind: 'cli' },
      action: change.action,
      org: change.org,
      target: change.target,
      before: maskSecrets(change.before ?? null),
      after: maskSecrets(change.after ?? null),
      requestId: ctx?.requestId ?? null,
      ip: ctx?.ip ?? null,
    }
    await this.store.append(entry)
    if (ctx) ctx.recorded++
  }
}
