// Keys: service keys (create — shown once — and revoke), provider keys (set, masked), signing secrets.

import { useState } from 'preact/hooks'
import { api, get, orgPath } from '../api'
import { DangerCell, Empty, ErrorNote, Field, fmtTime, IfCanChange, Section, ShownOnce, useAction, useLoad } from '../components'
import type { OrgDetail, ServiceKeyInfo } from '../types'
import { Providers } from './providers'

const PROVIDERS = ['openai', 'anthropic', 'google', 'mistral']

export function KeysPage({ org }: { org: string }) {
  const detail = useLoad(() => get<OrgDetail>(orgPath(org)), [org])
  return (
    <div class="stack">
      <h1>Keys</h1>
      <ErrorNote error={detail.error} />
      <ServiceKeys org={org} />
      {detail.data && <ProviderKeys org={org} detail={detail.data} reload={detail.reload} />}
      {detail.data && <Providers org={org} detail={detail.data} reload={detail.reload} />}
      {detail.data && <SigningSecrets org={org} detail={detail.data} reload={detail.reload} />}
    </div>
  )
}

function ServiceKeys({ org }: { org: string }) {
  const keys = useLoad(() => get<{ data: ServiceKeyInfo[] }>(orgPath(org, '/service-keys')), [org])
  const [name, setName] = useState('')
  const [created, setCreated] = useState<{ id: string; key: string }>()
  const [error, busy, run] = useAction()
  const create = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      setCreated(await api<{ id: string; key: string }>('POST', orgPath(org, '/service-keys'), name ? { name } : {}))
      setName('')
      keys.reload()
    })
  }
  const rotate = (k: ServiceKeyInfo) =>
    run(async () => {
      const grace = prompt(`Rotate key ${k.name ?? k.id}: how many seconds may the old key still work? (0: it stops now)`, '0')
      if (grace === null) return
      if (!/^\d*$/.test(grace.trim())) throw new Error('The grace is a whole number of seconds')
      const made = await api<{ id: string; key: string }>('POST', orgPath(org, `/service-keys/${encodeURIComponent(k.id)}/rotate`), { graceSeconds: Number(grace.trim() || 0) })
      setCreated(made)
      keys.reload()
    })
  const revoke = (k: ServiceKeyInfo) =>
    run(async () => {
      if (!confirm(`Revoke key ${k.name ?? k.id}? Requests using it get 401 from now on.`)) return
      await api('DELETE', orgPath(org, `/service-keys/${encodeURIComponent(k.id)}`))
      keys.reload()
    })
  const list = keys.data?.data ?? []
  return (
    <Section title="Service keys">
      <p class="hint">
        Callers send <code>Authorization: GwKey &lt;key&gt;</code>. A key is shown once, when it is created.
      </p>
      <IfCanChange>
        <form class="row" onSubmit={create} aria-label="Create a service key">
          <Field label="Name (optional)">
            <input name="keyName" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="backend" />
          </Field>
          <button type="submit" disabled={busy}>
            Create key
          </button>
        </form>
      </IfCanChange>
      <ErrorNote error={error ?? keys.error} />
      {created && <ShownOnce label={`New key ${created.id}`} value={created.key} onDone={() => setCreated(undefined)} />}
      {keys.data && list.length === 0 && <Empty title="No service keys yet — create one above to call gw." />}
      {list.length > 0 && (
        <table aria-label="Service keys">
          <thead>
            <tr>
              <th>Id</th>
              <th>Name</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Expires</th>
              <th>Limits and scopes</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((k) => (
              <tr key={k.id}>
                <td>
                  <code>{k.id}</code>
                </td>
                <td>{k.name ?? '—'}</td>
                <td>{fmtTime(k.createdAt)}</td>
                <td>{fmtTime(k.lastUsedAt)}</td>
                <td>{k.expiresAt ? fmtTime(k.expiresAt) : 'never'}</td>
                <td>
                  {[
                    k.requestsPerMinute && `${k.requestsPerMinute} rpm`,
                    k.tokensPerMinute && `${k.tokensPerMinute} tpm`,
                    k.scopes?.endpoints && `endpoints ${k.scopes.endpoints.join(', ')}`,
                    k.scopes?.models && `models ${k.scopes.models.join(', ')}`,
                  ]
                    .filter(Boolean)
                    .join('; ') || '—'}
                </td>
                <td>
                  {k.revokedAt ? (
                    <span class="status bad">revoked {fmtTime(k.revokedAt)}</span>
                  ) : k.expiresAt && Date.parse(k.expiresAt) <= Date.now() ? (
                    <span class="status bad">expired</span>
                  ) : (
                    <span class="status ok">active</span>
                  )}
                </td>
                <td>
                  {!k.revokedAt && (
                    <IfCanChange>
                      <div class="row">
                        <button type="button" class="secondary" onClick={() => rotate(k)} aria-label={`Rotate ${k.id}`}>
                          Rotate
                        </button>
                        <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Revoke ${k.id}`}>
                          Revoke
                        </button>
                      </div>
                    </IfCanChange>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

function ProviderKeys({ org, detail, reload }: { org: string; detail: OrgDetail; reload: () => void }) {
  const [provider, setProvider] = useState('openai')
  const [name, setName] = useState('default')
  const [weight, setWeight] = useState('1')
  const [apiKey, setApiKey] = useState('')
  const [baseUrl, setBaseUrl] = useState('')
  const [enabled, setEnabled] = useState(true)
  const [error, busy, run] = useAction()
  // Provider records (a `kind`) have their own section (./providers.tsx).
  const native = detail.providers.filter((p) => !p.kind)
  const save = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      const w = /^\d+(\.\d+)?$/.test(weight.trim()) ? Number(weight) : weight
      await api('PUT', orgPath(org, `/providers/${provider}/keys/${encodeURIComponent(name)}`), { apiKey, enabled, weight: w, ...(baseUrl ? { baseUrl } : {}) })
      setApiKey('')
      reload()
    })
  }
  const remove = (p: string, n: string) =>
    run(async () => {
      if (!confirm(`Remove the ${p} key "${n}"?`)) return
      await api('DELETE', orgPath(org, `/providers/${p}/keys/${encodeURIComponent(n)}`))
      reload()
    })
  return (
    <Section title="Provider keys">
      <p class="hint">Several keys per provider share its traffic by weight; a key that meets a 429 or keeps failing sits out for a while.</p>
      {native.length === 0 ? (
        <Empty title="No provider keys for this org yet — add one below (the default org also uses OPENAI_API_KEY etc. from the environment)." />
      ) : (
        <table aria-label="Provider keys">
          <thead>
            <tr>
              <th>Provider</th>
              <th>Name</th>
              <th>Key</th>
              <th class="num">Weight</th>
              <th>Base URL</th>
              <th>Enabled</th>
              <th>Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {native.map((p) => (
              <tr key={`${p.provider}/${p.name}`}>
                <td>{p.provider}</td>
                <td>{p.name}</td>
                <td>
                  <code>{p.apiKey}</code>
                </td>
                <td class="num">{p.weight}</td>
                <td>{p.baseUrl ?? 'default'}</td>
                <td>{p.enabled ? 'yes' : 'no'}</td>
                <td>{fmtTime(p.updatedAt)}</td>
                <DangerCell label="Remove" aria={`Remove ${p.provider} key ${p.name}`} onClick={() => remove(p.provider, p.name)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <IfCanChange>
      <form class="grid-form" onSubmit={save} aria-label="Set a provider key">
        <Field label="Provider">
          <select value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            {PROVIDERS.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </Field>
        <Field label="Key name">
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        </Field>
        <Field label="API key">
          <input type="password" autocomplete="off" value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} required />
        </Field>
        <Field label="Weight">
          <input value={weight} onInput={(e) => setWeight(e.currentTarget.value)} inputMode="decimal" />
        </Field>
        <Field label="Base URL (optional)">
          <input value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} placeholder="https://…" />
        </Field>
        <label class="switch">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
        </label>
        <button type="submit" disabled={busy}>
          Save provider key
        </button>
      </form>
      </IfCanChange>
      <ErrorNote error={error} />
    </Section>
  )
}

function SigningSecrets({ org, detail, reload }: { org: string; detail: OrgDetail; reload: () => void }) {
  const [kid, setKid] = useState('')
  const [created, setCreated] = useState<{ kid: string; secret: string }>()
  const [error, busy, run] = useAction()
  const create = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      setCreated(await api<{ kid: string; secret: string }>('POST', orgPath(org, '/signing-secrets'), kid ? { kid } : {}))
      setKid('')
      reload()
    })
  }
  const remove = (k: string) =>
    run(async () => {
      if (!confirm(`Delete signing secret ${k}? Tokens signed with it stop working.`)) return
      await api('DELETE', orgPath(org, `/signing-secrets/${encodeURIComponent(k)}`))
      reload()
    })
  return (
    <Section title="Signing secrets (GwSigned tokens)">
      <IfCanChange>
        <form class="row" onSubmit={create} aria-label="Create a signing secret">
          <Field label="Key id (optional)">
            <input value={kid} onInput={(e) => setKid(e.currentTarget.value)} placeholder="generated" />
          </Field>
          <button type="submit" disabled={busy}>
            Create secret
          </button>
        </form>
      </IfCanChange>
      <ErrorNote error={error} />
      {created && <ShownOnce label={`New secret ${created.kid}`} value={created.secret} onDone={() => setCreated(undefined)} />}
      {detail.signingSecrets.length === 0 ? (
        <Empty title="No signing secrets — create one to let your backend sign short-lived GwSigned tokens." />
      ) : (
        <table aria-label="Signing secrets">
          <thead>
            <tr>
              <th>Key id</th>
              <th>Created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {detail.signingSecrets.map((s) => (
              <tr key={s.kid}>
                <td>
                  <code>{s.kid}</code>
                </td>
                <td>{fmtTime(s.createdAt)}</td>
                <DangerCell label="Delete" onClick={() => remove(s.kid)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}
