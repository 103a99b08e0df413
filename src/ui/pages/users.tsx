// Users (owners only): invite with a role and orgs (a first-sign-in link shown once), change a role, see and revoke a user's personal tokens, remove.

import { useState } from 'preact/hooks'
import { api, get, userPath } from '../api'
import { Empty, ErrorNote, Field, fmtTime, Section, ShownOnce, useAction, useLoad } from '../components'
import { PersonalTokens } from './personal-tokens'

interface UserInfo {
  id: string
  email: string
  name: string | null
  role: 'owner' | 'admin' | 'viewer'
  orgs: string[]
  hasPassword: boolean
  createdAt: string
}

const ROLES = ['viewer', 'admin', 'owner'] as const
const orgList = (text: string) => text.split(',').map((o) => o.trim()).filter(Boolean)

export function UsersPage({ org }: { org: string }) {
  const users = useLoad(() => get<{ data: UserInfo[] }>('/admin/users'), [])
  const [invite, setInvite] = useState({ email: '', name: '', role: 'viewer', orgs: org })
  const [link, setLink] = useState<{ email: string; link: string }>()
  const [error, busy, run] = useAction()
  const inviteUser = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      const body = { email: invite.email, role: invite.role, ...(invite.name ? { name: invite.name } : {}), ...(invite.role === 'owner' ? {} : { orgs: orgList(invite.orgs) }) }
      const user = await api<UserInfo>('POST', '/admin/users', body)
      const made = await api<{ link: string }>('POST', userPath(user.id, '/sign-in-link'))
      setLink({ email: user.email, link: made.link })
      setInvite({ email: '', name: '', role: 'viewer', orgs: org })
      users.reload()
    })
  }
  const newLink = (u: UserInfo) =>
    run(async () => {
      setLink({ email: u.email, link: (await api<{ link: string }>('POST', userPath(u.id, '/sign-in-link'))).link })
    })
  const remove = (u: UserInfo) =>
    run(async () => {
      if (!confirm(`Remove ${u.email}? Their sessions and personal tokens stop working at once.`)) return
      await api('DELETE', userPath(u.id))
      users.reload()
    })
  const list = users.data?.data ?? []
  return (
    <div class="stack">
      <h1>Users</h1>
      <Section title="Invite a user">
        <p class="hint">
          Owners do everything; admins everything inside their orgs but users; viewers read their orgs. The invitee opens the link once to choose a
          password, or signs in with single sign-on when it is set up.
        </p>
        <form class="grid-form" onSubmit={inviteUser} aria-label="Invite a user">
          <Field label="Email">
            <input type="email" value={invite.email} onInput={(e) => setInvite({ ...invite, email: e.currentTarget.value })} required />
          </Field>
          <Field label="Name (optional)">
            <input value={invite.name} onInput={(e) => setInvite({ ...invite, name: e.currentTarget.value })} />
          </Field>
          <Field label="Role">
            <select value={invite.role} onChange={(e) => setInvite({ ...invite, role: e.currentTarget.value })}>
              {ROLES.map((r) => (
                <option value={r} key={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Orgs" hint="comma-separated; an owner has every org">
            <input value={invite.orgs} disabled={invite.role === 'owner'} onInput={(e) => setInvite({ ...invite, orgs: e.currentTarget.value })} />
          </Field>
          <button type="submit" disabled={busy}>
            Invite
          </button>
        </form>
      </Section>
      <ErrorNote error={error ?? users.error} />
      {link && <ShownOnce label={`First-sign-in link for ${link.email}`} value={link.link} onDone={() => setLink(undefined)} />}
      {users.data && list.length === 0 && <Empty title="No users yet: the admin token is the only way in. Invite someone above." />}
      {list.length > 0 && (
        <table aria-label="Users">
          <thead>
            <tr>
              <th>Email</th>
              <th>Name</th>
              <th>Role and orgs</th>
              <th>Password</th>
              <th>Created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((u) => (
              <UserRow user={u} key={u.id} onSaved={users.reload} onLink={() => newLink(u)} onRemove={() => remove(u)} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  )
}

function UserRow({ user, onSaved, onLink, onRemove }: { user: UserInfo; onSaved: () => void; onLink: () => void; onRemove: () => void }) {
  const [role, setRole] = useState<string>(user.role)
  const [orgs, setOrgs] = useState(user.orgs.join(', '))
  const [showTokens, setShowTokens] = useState(false)
  const [error, busy, run] = useAction()
  const changed = role !== user.role || orgs !== user.orgs.join(', ')
  const save = () =>
    run(async () => {
      await api('PATCH', userPath(user.id), { role, ...(role === 'owner' ? {} : { orgs: orgList(orgs) }) })
      onSaved()
    })
  return (
    <>
      <tr>
        <td>{user.email}</td>
        <td>{user.name ?? '—'}</td>
        <td>
          <div class="row">
            <select aria-label={`Role of ${user.email}`} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
              {ROLES.map((r) => (
                <option value={r} key={r}>
                  {r}
                </option>
              ))}
            </select>
            {role !== 'owner' && <input aria-label={`Orgs of ${user.email}`} value={orgs} onInput={(e) => setOrgs(e.currentTarget.value)} />}
            {changed && (
              <button type="button" disabled={busy} onClick={save}>
                Save
              </button>
            )}
          </div>
          <ErrorNote error={error} />
        </td>
        <td>{user.hasPassword ? 'set' : 'not yet'}</td>
        <td>{fmtTime(user.createdAt)}</td>
        <td>
          <div class="row">
            <button type="button" class="secondary" onClick={onLink} aria-label={`New sign-in link for ${user.email}`}>
              Sign-in link
            </button>
            <button type="button" class="secondary" aria-expanded={showTokens} onClick={() => setShowTokens(!showTokens)} aria-label={`Personal tokens of ${user.email}`}>
              Tokens
            </button>
            <button type="button" class="danger" onClick={onRemove} aria-label={`Remove ${user.email}`}>
              Remove
            </button>
          </div>
        </td>
      </tr>
      {showTokens && (
        <tr>
          <td colSpan={6}>
            <PersonalTokens user={user} own={false} />
          </td>
        </tr>
      )}
    </>
  )
}
