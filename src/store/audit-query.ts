// The audit log's query as SQL both stores run (`?` placeholders) and its pages with their cursors.

import type { AuditEntry } from '../domain/people'
import { type AuditRow, auditCursor, auditCursorSeq, toAuditEntry } from './rows'
import type { AuditQuery } from './types'

export type Param = string | number | null

/** The WHERE clause of an audit query, with `?` placeholders (both stores number them their own way). */
export function auditFilter(q: AuditQuery): { where: string[]; values: Param[] } {
  const where: string[] = []
  const values: Param[] = []
  const add = (clause: string, ...vals: Param[]) => {
    where.push(clause)
    values.push(...vals)
  }
  const seq = auditCursorSeq(q.cursor)
  if (seq !== undefined) add('seq < ?', seq)
  if (q.org !== undefined) add('org_id = ?', q.org)
  if (q.withinOrgs !== undefined) add(q.withinOrgs.length ? `org_id IN (${q.withinOrgs.map(() => '?').join(', ')})` : '1 = 0', ...q.withinOrgs)
  if (q.actor !== undefined) add('(actor_kind = ? OR actor_id = ? OR actor_email = ?)', q.actor, q.actor, q.actor.toLowerCase())
  if (q.action?.endsWith('.')) add('substr(action, 1, ?) = ?', q.action.length, q.action)
  else if (q.action !== undefined) add('action = ?', q.action)
  if (q.since !== undefined) add('time_ms >= ?', q.since)
  if (q.until !== undefined) add('time_ms < ?', q.until)
  return { where, values }
}

/** The page and the next cursor from `limit + 1` rows read. */
export function auditPage(rows: AuditRow[], limit: number): { data: AuditEntry[]; nextCursor: string | null } {
  const more = rows.length > limit
  const page = more ? rows.slice(0, limit) : rows
  return { data: page.map(toAuditEntry), nextCursor: more && page.length ? auditCursor((page.at(-1) as AuditRow).seq) : null }
}

