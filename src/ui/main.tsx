// The dashboard's shell: sign-in, the org switcher, navigation between pages (hash routes) and sign-out.

import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, get, setSession, userPath } from './api'
import { AccessContext, ErrorNote, messageOf, useAutofocus, useLoad } from './components'
import { AccountPage } from './pages/account'
import { AuditPage } from './pages/audit'
import { UsersPage } from './pages/users'
import { KeysPage } from './pages/keys'
import { LogsPage } from './pages/logs'
import { McpPage } from './pages/mcp'
import { OverviewPage } from './pages/overview'
import { PromptsPage } from './pages/prompts'
import { SettingsPage } from './pages/settings'
import type { Me, OrgSummary } from './types'
import './styles.css'

interface SessionInfo {
  signedIn: boolean
  csrf?: string
  expiresAt?: string
  /** Whether single sign-on is set up (GW_UI_OIDC_*). */
  sso?: boolean
  /** Whether gw has users (else only the admin token signs in). */
  users?: boolean
  /** The signed-in user; null when signed in with the admin token. */
  user?: { id: string; email: string; name: string | null; role: string; hasPassword: boolean } | null
}

/** A value the address's hash carries once (`#sso-error=…`, `#first-sign-in=…`), taken out of the address. */
function takeHash(name: string): string | undefined {
  const m = new RegExp(`^#${name}=(.*)$`).exec(location.hash)
  if (!m) return undefined
  history.replaceState(null, '', location.pathname + location.search)
  return decodeURIComponent(m[1] as string)
}

const PAGES = [
  { id: 'overview', title: 'Overview', key: 'o' },
  { id: 'logs', title: 'Logs', key: 'l' },
  { id: 'keys', title: 'Keys', key: 'k' },
  { id: 'settings', title: 'Policy & access', key: 'p' },
  { id: 'prompts', title: 'Prompts', key: 'r' },
  { id: 'mcp', title: 'MCP', key: 'm' },
  { id: 'audit', title: 'Audit', key: 'a' },
  { id: 'users', title: 'Users', key: 'u', ownersOnly: true },
  { id: 'account', title: 'Account', key: 'c', usersOnly: true },
] as const

/** `#/logs/abc` → ['logs', 'abc']. */
function useHashRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent)
  const [parts, setParts] = useState(read)
  useEffect(() => {
    const on = () => setParts(read())
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return parts
}

function SignIn({ onSignedIn, sso, users, error: given }: { onSignedIn: (s: SessionInfo) => void; sso: boolean; users: boolean; error?: string }) {
  const [withToken, setWithToken] = useState(!users)
  const [email, setEmail] = useState('')
  const [secret, setSecret] = useState('')
  const [error, setError] = useState<string | undefined>(given)
  const [busy, setBusy] = useState(false)
  const input = useAutofocus<HTMLInputElement>()
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const body = withToken ? { token: secret } : { email, password: secret }
      onSignedIn({ ...(await api<SessionInfo>('POST', '/ui/session', body)), signedIn: true })
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <form class="card" onSubmit={submit}>
        <h1>gw</h1>
        {withToken ? (
          <p>Sign in with the admin token (the value of <code>GW_ADMIN_TOKEN</code>): the break-glass owner.</p>
        ) : (
          <>
            <p>Sign in with your email and password.</p>
            <label class="field">
              <span>Email</span>
              <input ref={input} type="email" name="email" autocomplete="username" value={email} onInput={(e) => setEmail(e.currentTarget.value)} required />
            </label>
          </>
        )}
        <label class="field">
          <span>{withToken ? 'Admin token' : 'Password'}</span>
          <input
            ref={withToken ? input : undefined}
            type="password"
            name={withToken ? 'token' : 'password'}
            autocomplete="current-password"
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
            required
          />
        </label>
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {sso && (
          <a class="button secondary" href="/ui/sso/start">
            Sign in with single sign-on
          </a>
        )}
        <button
          type="button"
          class="link"
          onClick={() => {
            setWithToken(!withToken)
            setSecret('')
          }}
        >
          {withToken ? 'Use email and password instead' : 'Use the admin token instead'}
        </button>
      </form>
    </main>
  )
}

/** After a first-sign-in link: the user chooses a password (PUT /admin/users/:id/password). */
function SetPassword({ userId, onDone }: { userId: string; onDone: () => void }) {
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string>()
  const input = useAutofocus<HTMLInputElement>()
  const submit = async (e: Event) => {
    e.preventDefault()
    try {
      await api('PUT', userPath(userId, '/password'), { password })
      onDone()
    } catch (err) {
      setError(messageOf(err))
    }
  }
  return (
    <main class="signin">
      <form class="card" onSubmit={submit}>
        <h1>gw</h1>
        <p>Choose your password (at least 12 characters) to sign in next time.</p>
        <label class="field">
          <span>New password</span>
          <input ref={input} type="password" name="new-password" autocomplete="new-password" minLength={12} value={password} onInput={(e) => setPassword(e.currentTarget.value)} required />
        </label>
        <ErrorNote error={error} />
        <button type="submit">Set password</button>
      </form>
    </main>
  )
}

function OrgSwitcher({ org, onChange }: { org: string; onChange: (org: string) => void }) {
  const orgs = useLoad(() => get<{ data: OrgSummary[] }>('/admin/orgs'), [])
  const list = orgs.data?.data ?? []
  useEffect(() => {
    if (list.length && !list.some((o) => o.id === org)) onChange((list[0] as OrgSummary).id)
  }, [orgs.data])
  return (
    <label class="org-switcher">
      <span>Org</span>
      <select aria-label="Org" value={org} onChange={(e) => onChange(e.currentTarget.value)}>
        {list.map((o) => (
          <option value={o.id} key={o.id}>
            {o.name} ({o.id})
          </option>
        ))}
      </select>
    </label>
  )
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const route = useHashRoute()
  const me = useLoad(() => get<Me>('/admin/me'), [])
  const [org, setOrgState] = useState(() => localStorage.getItem('gw.org') ?? 'default')
  const setOrg = (o: string) => {
    localStorage.setItem('gw.org', o)
    setOrgState(o)
  }
  const isOwner = me.data?.role === 'owner'
  const user = me.data?.kind === 'user' ? me.data : undefined
  const pages = PAGES.filter((p) => ('ownersOnly' in p ? isOwner : 'usersOnly' in p ? !!user : true))
  const page = pages.find((p) => p.id === route[0]) ?? PAGES[0]
  const canChange = isOwner || (me.data?.role === 'admin' && !!me.data.orgs?.includes(org))
  useEffect(() => {
    document.title = `${page.title} · gw`
  }, [page])
  // Keyboard: g then a page's letter moves there (g o, g l, g k, g p, g r, g m, g a, g u, g c).
  useEffect(() => {
    let armed = false
    const on = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) || e.metaKey || e.ctrlKey || e.altKey) return
      if (armed) {
        const p = PAGES.find((x) => x.key === e.key)
        if (p) location.hash = `#/${p.id}`
        armed = false
      } else armed = e.key === 'g'
    }
    addEventListener('keydown', on)
    return () => removeEventListener('keydown', on)
  }, [])
  const rest = route.slice(1)
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/overview">
          gw
        </a>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a href={`#/${p.id}`} aria-current={p === page ? 'page' : undefined} title={`g ${p.key}`} key={p.id}>
              {p.title}
            </a>
          ))}
        </nav>
        <OrgSwitcher org={org} onChange={setOrg} />
        {me.data && (
          <span class="whoami" title={me.data.kind === 'admin-token' ? 'signed in with the admin token' : me.data.email}>
            {me.data.kind === 'admin-token' ? 'admin token' : me.data.email} · {canChange || isOwner ? me.data.role : `${me.data.role} (read only)`}
          </span>
        )}
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <AccessContext.Provider value={{ canChange, isOwner }}>
      <main class="page" key={`${org}/${page.id}/${canChange}`}>
        {page.id === 'overview' && <OverviewPage org={org} />}
        {page.id === 'logs' && <LogsPage org={org} selected={rest[0]} />}
        {page.id === 'keys' && <KeysPage org={org} />}
        {page.id === 'settings' && <SettingsPage org={org} />}
        {page.id === 'prompts' && <PromptsPage org={org} slug={rest[0]} />}
        {page.id === 'mcp' && <McpPage org={org} />}
        {page.id === 'audit' && <AuditPage org={org} />}
        {page.id === 'users' && isOwner && <UsersPage org={org} />}
        {page.id === 'account' && user && <AccountPage me={user} />}
      </main>
      </AccessContext.Provider>
    </div>
  )
}

function App() {
  const [session, setSessionState] = useState<SessionInfo>()
  const [ssoError] = useState(() => takeHash('sso-error'))
  const [link] = useState(() => takeHash('first-sign-in'))
  const [linkError, setLinkError] = useState<string>()
  const [settingPassword, setSettingPassword] = useState(false)
  const signedOut = () => setSessionState((s) => ({ signedIn: false, sso: s?.sso, users: !!s?.user || s?.users }))
  const accept = (s: SessionInfo) => {
    setSession(s.csrf ?? '', signedOut)
    setSessionState(s)
  }
  useEffect(() => {
    // A first-sign-in link signs its user in once; the next step is choosing a password.
    const signIn = link
      ? api<SessionInfo>('POST', '/ui/session', { link }).then(
          (s) => {
            setSettingPassword(true)
            return { ...s, signedIn: true }
          },
          (err) => {
            setLinkError(messageOf(err))
            return get<SessionInfo>('/ui/session')
          },
        )
      : get<SessionInfo>('/ui/session')
    signIn.then(accept, signedOut)
  }, [])
  if (!session) return null
  if (!session.signedIn) return <SignIn onSignedIn={accept} sso={!!session.sso} users={!!session.users} error={ssoError ?? linkError} />
  if (settingPassword && session.user) return <SetPassword userId={session.user.id} onDone={() => setSettingPassword(false)} />
  const signOut = async () => {
    await api('DELETE', '/ui/session').catch(() => {})
    signedOut()
  }
  return <Shell onSignOut={signOut} />
}

render(<App />, document.getElementById('root') as HTMLElement)
