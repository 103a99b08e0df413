// SQLite storage of the audit log: appended, read newest first with a cursor, pruned only by its retention (a trigger refuses updates).

import type { Database } from 'bun:sqlite'
import type { AuditEntry } from '../../domain/people'
import { auditFilter, auditPage, type Param } from '../audit-query'
import type { AuditRow } from '../rows'
import type { AuditQuery, AuditStore } from '../types'

export class SqliteAuditStore implements AuditStore {
  private readonly insert

  constructor(private readonly db: Database) {
    this.insert = db.query<null, Param[]>(
      `INSERT INTO audit_log (id, time, time_ms, actor_kind, actor_id, actor_email, action, org_id, target, before_json, after_json, request_id, ip)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
    )
  }

  async append(e: AuditEntry): Promise<void> {
    const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v))
    this.insert.run(
      e.id, e.time, Date.parse(e.time), e.actor.kind, e.actor.id ?? null, e.actor.email ?? null,
      e.action, e.org, e.target, json(e.before), json(e.after), e.requestId, e.ip,
    )
  }

  async query(q: AuditQuery) {
    const { where, values } = auditFilter(q)
    const sql = `SELECT * FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ${q.limit + 1}`
    return auditPage(this.db.query<AuditRow, Param[]>(sql).all(...values), q.limit)
  }

  async prune(before: number, limit: number): Promise<number> {
    return this.db
      .query<null, [number, number]>('DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE time_ms < ?1 ORDER BY seq LIMIT ?2)')
      .run(before, limit).changes
  }
}
