// The MCP page: the org's upstream MCP servers (listed, registered, removed; secrets write-only), its tool
// policy, and how an MCP client connects to gw's /mcp (PRODUCT §20, docs/mcp.md).

import { useState } from 'preact/hooks'
import { api, get, orgPath } from '../api'
import { DangerCell, CopyButton, Empty, ErrorNote, Field, fmtTime, IfCanChange, JsonView, Section, SubmitRow, useAction, useLoad } from '../components'
import type { OrgDetail } from '../types'

/** A server as the admin API shows it: header names only, the bearer token and client secret as `****`. */
interface McpServerInfo {
  name: string
  url: string
  headers: string[]
  auth: { kind: 'none' | 'bearer' | 'oauth'; scope?: string | null; clientId?: string | null }
  enabled: boolean
  updatedAt: string
}

const COLUMNS = ['Name', 'URL', 'Auth', 'Headers', 'Enabled', 'Updated', '']
const AUTH_LABELS = { none: 'None', bearer: 'Bearer secret (stored)', oauth: 'OAuth, each end user' } as const
type AuthKind = keyof typeof AUTH_LABELS

export function McpPage({ org }: { org: string }) {
  const servers = useLoad(() => get<{ data: McpServerInfo[] }>(orgPath(org, '/mcp-servers')), [org])
  const detail = useLoad(() => get<OrgDetail>(orgPath(org)), [org])
  const [error, , run] = useAction()
  const list = servers.data?.data ?? []
  const remove = (s: McpServerInfo) =>
    run(async () => {
      if (!confirm(`Remove the MCP server "${s.name}"? Its tools disappear and the tokens gw held for it are deleted.`)) return
      await api('DELETE', orgPath(org, `/mcp-servers/${encodeURIComponent(s.name)}`))
      servers.reload()
    })
  const url = `${location.origin}/mcp`
  const config = JSON.stringify({ mcpServers: { gw: { type: 'http', url, headers: { Authorization: 'Bearer ${GW_KEY}', 'x-gw-end-user-id': '${USER}' } } } }, null, 2)
  return (
    <>
      <Section title="MCP servers">
        <p class="hint">
          Agents reach these servers' tools through gw's <code>/mcp</code>, named <code>server__tool</code>. Header values and secrets are write-only: set them
          again to change them.
        </p>
        {servers.error && <ErrorNote error={servers.error} />}
        {list.length === 0 ? (
          <Empty title="No MCP servers yet — register one below." />
        ) : (
          <table aria-label="MCP servers">
            <thead>
              <tr>
                {COLUMNS.map((c) => (
                  <th key={c}>{c}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.name}>
                  <td>{s.name}</td>
                  <td>
                    <code>{s.url}</code>
                  </td>
                  <td>{s.auth.kind === 'oauth' && s.auth.scope ? `oauth (${s.auth.scope})` : s.auth.kind}</td>
                  <td>{s.headers.length ? s.headers.join(', ') : '—'}</td>
                  <td>{s.enabled ? 'yes' : 'no'}</td>
                  <td>{fmtTime(s.updatedAt)}</td>
                  <DangerCell label="Remove" aria={`Remove MCP server ${s.name}`} onClick={() => remove(s)} />
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <ErrorNote error={error} />
        <IfCanChange>
          <ServerForm org={org} reload={servers.reload} />
        </IfCanChange>
      </Section>
      {list.some((x) => x.auth.kind === 'oauth') && (
        <Section title="Users who authorised gw">
          <p class="hint">Per OAuth server, the end users gw holds tokens for (never the tokens). Forgetting a user's tokens makes their next call ask them again.</p>
          {list
            .filter((x) => x.auth.kind === 'oauth')
            .map((x) => (
              <OAuthUsers org={org} server={x.name} key={x.name} />
            ))}
        </Section>
      )}
      <Section title="Tool policy">
        <p class="hint">
          The org policy's <code>mcp</code> (edited on the Policy &amp; access page): allowed and denied <code>server__tool</code> globs and the tool calls
          per minute. Service keys may narrow it when they are created.
        </p>
        {detail.data && <JsonView value={(detail.data.policy as { mcp?: unknown }).mcp ?? {}} />}
      </Section>
      <Section title="Connecting an agent">
        <p class="hint">
          Any MCP client that takes a URL and headers. Claude Code's <code>.mcp.json</code>, with a service key in <code>GW_KEY</code>:
        </p>
        <pre class="json" aria-label="Client configuration">{config}</pre>
        <CopyButton text={config} label="Copy configuration" />
      </Section>
    </>
  )
}

interface McpUser {
  endUser: string
  authorised: boolean
  updatedAt: string
}

function OAuthUsers({ org, server }: { org: string; server: string }) {
  const path = orgPath(org, `/mcp-servers/${encodeURIComponent(server)}/users`)
  const users = useLoad(() => get<{ data: McpUser[] }>(path), [path])
  const [error, , run] = useAction()
  const forget = (u: McpUser) =>
    run(async () => {
      if (!confirm(`Forget ${u.endUser}'s tokens at "${server}"? Their next call asks them to authorise gw again.`)) return
      await api('DELETE', `${path}/${encodeURIComponent(u.endUser)}`)
      users.reload()
    })
  const list = users.data?.data ?? []
  return (
    <>
      <h3>{server}</h3>
      {list.length === 0 ? (
        <Empty title="Nobody has authorised gw at this server yet." />
      ) : (
        <table aria-label={`Users of ${server}`}>
          <tbody>
            {list.map((u) => (
              <tr key={u.endUser}>
                <td>{u.endUser}</td>
                <td>{u.authorised ? 'authorised' : 'authorisation under way'}</td>
                <td>{fmtTime(u.updatedAt)}</td>
                <DangerCell label="Forget" aria={`Forget ${u.endUser} at ${server}`} onClick={() => forget(u)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorNote error={users.error ?? error} />
    </>
  )
}


function ServerForm({ org, reload }: { org: string; reload: () => void }) {
  const [name, setName] = useState('')
  const [url, setUrl] = useState('')
  const [kind, setKind] = useState<AuthKind>('none')
  const [token, setToken] = useState('')
  const [scope, setScope] = useState('')
  const [clientId, setClientId] = useState('')
  const [headers, setHeaders] = useState('')
  const [enabled, setEnabled] = useState(true)
  const [saved, setSaved] = useState(false)
  const [error, busy, run] = useAction()
  const save = (e: Event) => {
    e.preventDefault()
    setSaved(false)
    return run(async () => {
      let parsed: Record<string, string> | undefined
      if (headers.trim()) {
        try {
          parsed = JSON.parse(headers) as Record<string, string>
        } catch {
          throw new Error('Headers: not valid JSON')
        }
      }
      const auth =
        kind === 'bearer'
          ? { kind, token }
          : kind === 'oauth'
            ? { kind, ...(scope.trim() ? { scope: scope.trim() } : {}), ...(clientId.trim() ? { clientId: clientId.trim() } : {}) }
            : { kind }
      await api('PUT', orgPath(org, `/mcp-servers/${encodeURIComponent(name.trim())}`), { url: url.trim(), auth, enabled, ...(parsed ? { headers: parsed } : {}) })
      setToken('')
      setHeaders('')
      setSaved(true)
      reload()
    })
  }
  return (
    <form class="grid-form" onSubmit={save} aria-label="Register an MCP server">
      <Field label="Name" hint="the tools' prefix: lowercase letters, digits, - and single _">
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required placeholder="github" />
      </Field>
      <Field label="URL" hint="the server's Streamable HTTP endpoint">
        <input value={url} onInput={(e) => setUrl(e.currentTarget.value)} required placeholder="https://…/mcp" />
      </Field>
      <Field label="Auth">
        <select value={kind} onChange={(e) => setKind(e.currentTarget.value as AuthKind)}>
          {(Object.keys(AUTH_LABELS) as AuthKind[]).map((k) => (
            <option key={k} value={k}>
              {AUTH_LABELS[k]}
            </option>
          ))}
        </select>
      </Field>
      {kind === 'bearer' && (
        <Field label="Bearer secret">
          <input type="password" autocomplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
        </Field>
      )}
      {kind === 'oauth' && (
        <>
          <Field label="Scope (optional)">
            <input value={scope} onInput={(e) => setScope(e.currentTarget.value)} />
          </Field>
          <Field label="Client id (optional)" hint="empty: gw registers itself (dynamic client registration)">
            <input value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} autocomplete="off" />
          </Field>
        </>
      )}
      <Field label="Headers (JSON, optional)" hint="sent to this server only; values stored encrypted">
        <textarea value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} rows={2} placeholder='{"x-team": "search"}' autocomplete="off" />
      </Field>
      <label class="switch">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      <SubmitRow label="Save MCP server" busy={busy} saved={saved} />
      <ErrorNote error={error} />
    </form>
  )
}
