// Audit: who changed what (GET /admin/audit), newest first, filtered by org, actor and action, paged on the server.

import { Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { get, query } from '../api'
import type { AuditEntry } from '../../domain/people'
import { Empty, ErrorNote, Field, fmtTime, JsonView, useLoad } from '../components'

const actorOf = (a: AuditEntry['actor']) => (a.kind === 'user' ? (a.email ?? a.id ?? 'user') : a.kind)

export function AuditPage({ org }: { org: string }) {
  const [filters, setFilters] = useState({ thisOrg: true, actor: '', action: '' })
  const [cursors, setCursors] = useState<string[]>([])
  const [open, setOpen] = useState<string>()
  const cursor = cursors.at(-1)
  const page = useLoad(
    () =>
      get<{ data: AuditEntry[]; nextCursor: string | null }>(
        `/admin/audit${query({ org: filters.thisOrg ? org : undefined, actor: filters.actor || undefined, action: filters.action || undefined, limit: 50, cursor })}`,
      ),
    [org, filters, cursor],
  )
  const set = (f: Partial<typeof filters>) => {
    setCursors([])
    setFilters({ ...filters, ...f })
  }
  const list = page.data?.data ?? []
  return (
    <div class="stack">
      <h1>Audit log</h1>
      <form class="row" aria-label="Audit filters" onSubmit={(e) => e.preventDefault()}>
        <label class="switch">
          <input type="checkbox" checked={filters.thisOrg} onChange={(e) => set({ thisOrg: e.currentTarget.checked })} /> Only org {org}
        </label>
        <Field label="Actor" hint="user, admin-token, cli, config-file, or an email">
          <input value={filters.actor} onChange={(e) => set({ actor: e.currentTarget.value })} />
        </Field>
        <Field label="Action" hint='e.g. policy.set, or a prefix such as "service-key."'>
          <input value={filters.action} onChange={(e) => set({ action: e.currentTarget.value })} />
        </Field>
      </form>
      <ErrorNote error={page.error} />
      {page.data && list.length === 0 && <Empty title="No changes recorded with these filters." />}
      {list.length > 0 && (
        <table aria-label="Audit log">
          <thead>
            <tr>
              <th>Time</th>
              <th>Actor</th>
              <th>Action</th>
              <th>Org</th>
              <th>Target</th>
              <th>From</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <Fragment key={e.id}>
                <tr>
                  <td>{fmtTime(e.time)}</td>
                  <td>{actorOf(e.actor)}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{e.org ?? '—'}</td>
                  <td>
                    <code>{e.target}</code>
                  </td>
                  <td>{e.ip ?? '—'}</td>
                  <td>
                    <button type="button" class="secondary" onClick={() => setOpen(open === e.id ? undefined : e.id)} aria-expanded={open === e.id}>
                      {open === e.id ? 'Hide' : 'Before / after'}
                    </button>
                  </td>
                </tr>
                {open === e.id && (
                  <tr>
                    <td colSpan={7}>
                      <div class="row">
                        <div>
                          <strong>Before</strong>
                          <JsonView value={e.before} />
                        </div>
                        <div>
                          <strong>After</strong>
                          <JsonView value={e.after} />
                        </div>
                      </div>
                      {e.requestId && <p class="hint">Request {e.requestId}</p>}
                    </td>
                  </tr>
                )}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
      <div class="row">
        <button type="button" class="secondary" disabled={!cursors.length} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button type="button" class="secondary" disabled={!page.data?.nextCursor} onClick={() => page.data?.nextCursor && setCursors([...cursors, page.data.nextCursor])}>
          Older
        </button>
      </div>
    </div>
  )
}
