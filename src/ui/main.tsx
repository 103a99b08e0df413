// The dashboard's shell: sign-in, the org switcher, navigation between pages (hash routes) and sign-out.

import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, get, setSession } from './api'
import { ErrorNote, messageOf, useAutofocus, useLoad } from './components'
import { KeysPage } from './pages/keys'
import { LogsPage } from './pages/logs'
import { McpPage } from './pages/mcp'
import { OverviewPage } from './pages/overview'
import { PromptsPage } from './pages/prompts'
import { SettingsPage } from './pages/settings'
import type { OrgSummary } from './types'
import './styles.css'

interface SessionInfo {
  signedIn: boolean
  csrf?: string
  expiresAt?: string
}

const PAGES = [
  { id: 'overview', title: 'Overview', key: 'o' },
  { id: 'logs', title: 'Logs', key: 'l' },
  { id: 'keys', title: 'Keys', key: 'k' },
  { id: 'settings', title: 'Policy & access', key: 'p' },
  { id: 'prompts', title: 'Prompts', key: 'r' },
  { id: 'mcp', title: 'MCP', key: 'm' },
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

function SignIn({ onSignedIn }: { onSignedIn: (s: SessionInfo) => void }) {
  const [token, setToken] = useState('')
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const input = useAutofocus<HTMLInputElement>()
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      onSignedIn({ ...(await api<SessionInfo>('POST', '/ui/session', { token })), signedIn: true })
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
        <p>Sign in with the admin token (the value of <code>GW_ADMIN_TOKEN</code>).</p>
        <label class="field">
          <span>Admin token</span>
          <input ref={input} type="password" name="token" autocomplete="current-password" value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
        </label>
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
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
  const [org, setOrgState] = useState(() => localStorage.getItem('gw.org') ?? 'default')
  const setOrg = (o: string) => {
    localStorage.setItem('gw.org', o)
    setOrgState(o)
  }
  const page = PAGES.find((p) => p.id === route[0]) ?? PAGES[0]
  useEffect(() => {
    document.title = `${page.title} · gw`
  }, [page])
  // Keyboard: g then a page's letter moves there (g o, g l, g k, g p, g r, g m).
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
          {PAGES.map((p) => (
            <a href={`#/${p.id}`} aria-current={p === page ? 'page' : undefined} title={`g ${p.key}`} key={p.id}>
              {p.title}
            </a>
          ))}
        </nav>
        <OrgSwitcher org={org} onChange={setOrg} />
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main class="page" key={`${org}/${page.id}`}>
        {page.id === 'overview' && <OverviewPage org={org} />}
        {page.id === 'logs' && <LogsPage org={org} selected={rest[0]} />}
        {page.id === 'keys' && <KeysPage org={org} />}
        {page.id === 'settings' && <SettingsPage org={org} />}
        {page.id === 'prompts' && <PromptsPage org={org} slug={rest[0]} />}
        {page.id === 'mcp' && <McpPage org={org} />}
      </main>
    </div>
  )
}

function App() {
  const [session, setSessionState] = useState<SessionInfo>()
  const signedOut = () => setSessionState({ signedIn: false })
  const accept = (s: SessionInfo) => {
    setSession(s.csrf ?? '', signedOut)
    setSessionState(s)
  }
  useEffect(() => {
    get<SessionInfo>('/ui/session').then(accept, signedOut)
  }, [])
  if (!session) return null
  if (!session.signedIn) return <SignIn onSignedIn={accept} />
  const signOut = async () => {
    await api('DELETE', '/ui/session').catch(() => {})
    signedOut()
  }
  return <Shell onSignOut={signOut} />
}

render(<App />, document.getElementById('root') as HTMLElement)
