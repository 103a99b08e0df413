// PostgreSQL storage of the audit log: appended, read newest first with a cursor; triggers refuse updates, and deletes outside the retention pruner.

import type { SQL } from 'bun'
import type { AuditEntry } from '../../domain/people'
import type { AuditRow } from '../rows'
import { auditFilter, auditPage } from '../audit-query'
import type { AuditQuery, AuditStore } from '../types'
import { q } from './errors'

export class PgAuditStore implements AuditStore {
  constructor(private readonly sql: SQL) {}

  async append(e: AuditEntry): Promise<void> {
    const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v))
    await q(
      this.sql`INSERT INTO audit_log (id, time, time_ms, actor_kind, actor_id, actor_email, action, org_id, target, before_json, after_json, request_id, ip)
               VALUES (${e.id}, ${e.time}, ${Date.parse(e.time)}, ${e.actor.kind}, ${e.actor.id ?? null}, ${e.actor.email ?? null}, ${e.action},
                       ${e.org}, ${e.target}, ${json(e.before)}::jsonb, ${json(e.after)}::jsonb, ${e.requestId}, ${e.ip})`,
    )
  }

  async query(query: AuditQuery) {
    const { where, values } = auditFilter(query)
    let n = 0
    const clause = where.join(' AND ').replace(/\?/g, () => `$${++n}`)
    const text = `SELECT * FROM audit_log ${where.length ? `WHERE ${clause}` : ''} ORDER BY seq DESC LIMIT ${query.limit + 1}`
    return auditPage(await q<AuditRow[]>(this.sql.unsafe(text, values)), query.limit)
  }

  async prune(before: number, limit: number): Promise<number> {
    return q(
      this.sql.begin(async (tx) => {
        // The append-only trigger lets a delete through only in a transaction that set this (docs/auth.md).
        await tx`SELECT set_config('gw.audit_prune', 'on', true)`
        const res = await tx`DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE time_ms < ${before} ORDER BY seq LIMIT ${limit})`
        return res.count as number
      }),
    )
  }
}
