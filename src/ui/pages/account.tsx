// Account (a signed-in user, whatever the role): who you are, your personal admin tokens (create, shown once; revoke), your password.

import { useState } from 'preact/hooks'
import { api, userPath } from '../api'
import { ErrorNote, Field, Section, useAction } from '../components'
import type { UserMe } from '../types'
import { PersonalTokens } from './personal-tokens'

export function AccountPage({ me }: { me: UserMe }) {
  return (
    <div class="stack">
      <h1>Account</h1>
      <Section title="You">
        <dl class="facts">
          <dt>Email</dt>
          <dd>{me.email}</dd>
          <dt>Name</dt>
          <dd>{me.name ?? '—'}</dd>
          <dt>Role</dt>
          <dd>{me.role}</dd>
          <dt>Orgs</dt>
          <dd>{me.orgs === null ? 'every org' : me.orgs.join(', ') || 'none'}</dd>
        </dl>
      </Section>
      <Section title="Personal tokens">
        <p class="hint">
          For scripts: a token acts with your role and orgs, as they are when it is used, on the admin API (
          <code>Authorization: Bearer gw_at_…</code>). It is shown once; revoke it when it is no longer needed.
        </p>
        <PersonalTokens user={me} own />
      </Section>
      <PasswordForm userId={me.id} />
    </div>
  )
}

function PasswordForm({ userId }: { userId: string }) {
  const [password, setPassword] = useState('')
  const [done, setDone] = useState(false)
  const [error, busy, run] = useAction()
  const submit = (e: Event) => {
    e.preventDefault()
    setDone(false)
    return run(async () => {
      await api('PUT', userPath(userId, '/password'), { password })
      setPassword('')
      setDone(true)
    })
  }
  return (
    <Section title="Password">
      <form class="grid-form" onSubmit={submit} aria-label="Change your password">
        <Field label="New password" hint="at least 12 characters; your next sign-in uses it">
          <input type="password" autocomplete="new-password" minLength={12} value={password} onInput={(e) => setPassword(e.currentTarget.value)} required />
        </Field>
        <button type="submit" disabled={busy}>
          Change password
        </button>
      </form>
      <ErrorNote error={error} />
      {done && <p role="status">Password changed.</p>}
    </Section>
  )
}
