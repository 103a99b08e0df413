// A user's personal admin tokens (PRODUCT §18; never the tokens themselves): listed with their last use, revoked after a confirmation, and on the user's own Account page created (the token shown once).

import { useState } from 'preact/hooks'
import { api, get, userPath } from '../api'
import { Empty, ErrorNote, Field, fmtTime, ShownOnce, useAction, useLoad } from '../components'

interface TokenInfo {
  id: string
  name: string | null
  createdAt: string
  lastUsedAt: string | null
}

/**
 * `own`: the signed-in user's tokens (a form creates one); else an owner looking at another user's
 * (revoke only: a token acts as its user, so only the user makes one). Either may revoke: the server
 * allows the user and owners (`access: 'self'`), whatever the role.
 */
export function PersonalTokens({ user, own }: { user: { id: string; email: string }; own: boolean }) {
  const tokens = useLoad(() => get<{ tokens: TokenInfo[] }>(userPath(user.id)), [user.id])
  const [name, setName] = useState('')
  const [made, setMade] = useState<{ name: string; token: string }>()
  const [error, busy, run] = useAction()
  const create = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      const { token } = await api<{ token: string }>('POST', userPath(user.id, '/tokens'), name ? { name } : {})
      setMade({ name, token })
      setName('')
      tokens.reload()
    })
  }
  const revoke = (t: TokenInfo) =>
    run(async () => {
      const whose = own ? 'your token' : `the token of ${user.email}`
      if (!confirm(`Revoke ${whose} ${t.name ?? t.id}? It stops working at once.`)) return
      await api('DELETE', userPath(user.id, `/tokens/${encodeURIComponent(t.id)}`))
      tokens.reload()
    })
  const list = tokens.data?.tokens ?? []
  return (
    <div class="stack">
      {own && (
        <form class="grid-form" onSubmit={create} aria-label="Create a personal token">
          <Field label="Token name (optional)" hint="where it is used: a laptop, a CI job">
            <input value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <button type="submit" disabled={busy}>
            Create token
          </button>
        </form>
      )}
      <ErrorNote error={error ?? tokens.error} />
      {made && <ShownOnce label={made.name ? `Personal token ${made.name}` : 'Personal token'} value={made.token} onDone={() => setMade(undefined)} />}
      {tokens.data && list.length === 0 && (
        <Empty title="No personal tokens.">
          {own ? (
            <>A token acts with your role on the admin API, for scripts: create one above.</>
          ) : (
            <>
              The user makes them on their Account page, with <code>gw user token</code> or POST /admin/users/:id/tokens.
            </>
          )}
        </Empty>
      )}
      {list.length > 0 && (
        <table aria-label={own ? 'Your tokens' : `Tokens of ${user.email}`}>
          <thead>
            <tr>
              <th>Name</th>
              <th>Id</th>
              <th>Created</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <tr key={t.id}>
                <td>{t.name ?? '—'}</td>
                <td>
                  <code>{t.id}</code>
                </td>
                <td>{fmtTime(t.createdAt)}</td>
                <td>{fmtTime(t.lastUsedAt)}</td>
                {/* Not DangerCell: that hides the button from whoever cannot change the org, and a viewer revokes its own tokens. */}
                <td>
                  <button type="button" class="danger" onClick={() => revoke(t)} aria-label={`Revoke token ${t.name ?? t.id}`}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  )
}
