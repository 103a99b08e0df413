// Policy & access: the org's policy with its budgets (validated by the server), OIDC, and routes.

import { useState } from 'preact/hooks'
import { api, get, orgPath } from '../api'
import { DangerCell, Empty, ErrorNote, Field, IfCanChange, Section, SubmitRow, useAccess, useAction, useLoad } from '../components'
import type { OrgDetail, Route } from '../types'

type FieldKind = 'list' | 'number' | 'boolean' | 'json' | 'choice'
/** A policy field; a dotted key (`cache.mode`) is a field of an object field. */
const POLICY_FIELDS: { key: string; label: string; kind: FieldKind; hint: string; options?: string[]; example?: string }[] = [
  { key: 'allowedModels', label: 'Allowed models', kind: 'list', hint: 'Globs, comma-separated, e.g. openai/*, anthropic/claude-*. Empty: every model.' },
  { key: 'disabledProviders', label: 'Disabled providers', kind: 'list', hint: 'e.g. google, mistral' },
  { key: 'maxTokens', label: 'Max output tokens', kind: 'number', hint: 'Per request; larger max_tokens are refused.' },
  { key: 'maxPromptTokens', label: 'Max prompt tokens', kind: 'number', hint: 'Counted by gw before sending.' },
  { key: 'requestsPerMinute', label: 'Requests per minute', kind: 'number', hint: 'For the whole org.' },
  { key: 'tokensPerMinute', label: 'Tokens per minute', kind: 'number', hint: 'For the whole org.' },
  { key: 'allowStreaming', label: 'Streaming', kind: 'boolean', hint: '' },
  { key: 'blockedTerms', label: 'Blocked terms', kind: 'list', hint: 'Requests containing one are refused.' },
  { key: 'requiredMetadata', label: 'Required metadata keys', kind: 'list', hint: 'Requests without them are refused.' },
  { key: 'upstreamTimeoutMs', label: 'Upstream timeout (ms)', kind: 'number', hint: 'Overrides GW_UPSTREAM_TIMEOUT_MS for this org.' },
  { key: 'allowUnpricedModels', label: 'Models without a known price under a budget', kind: 'boolean', hint: 'Refused by default.' },
  {
    key: 'budgets',
    label: 'Budgets (JSON)',
    kind: 'json',
    example: '[{"scope": "org", "usd": 50, "period": "month"}]',
    hint: '[{"scope": "org" | "key" | "endUser", "usd": 50, "period": "day" | "month" | "total"}]; spend shows on the Overview.',
  },
  { key: 'cache.mode', label: 'Response cache', kind: 'choice', options: ['off', 'exact'], hint: 'exact: the same request is answered from the cache (x-gw-cache: hit).' },
  { key: 'cache.ttlSeconds', label: 'Cache TTL (seconds)', kind: 'number', hint: 'How long an answer is kept: 1 to 2,592,000 (30 days).' },
  { key: 'cache.maxEntryBytes', label: 'Largest cached answer (bytes)', kind: 'number', hint: 'Larger answers are not kept; default 1,048,576.' },
  { key: 'mcp.allowedTools', label: 'MCP tools allowed', kind: 'list', hint: 'server__tool globs, e.g. github__*, search__query. Empty: every tool of the MCP page.' },
  { key: 'mcp.deniedTools', label: 'MCP tools denied', kind: 'list', hint: 'Hidden from agents and refused, e.g. github__delete_*.' },
  { key: 'mcp.requestsPerMinute', label: 'MCP tool calls per minute', kind: 'number', hint: 'For the whole org.' },
  { key: 'promptCaching', label: 'Anthropic prompt caching', kind: 'choice', options: ['off', 'auto'], hint: 'auto: cache breakpoints on long stable prefixes (tools, system, earlier turns).' },
  {
    key: 'guardrails',
    label: 'Guardrails (JSON)',
    kind: 'json',
    example: '[{"name": "pii", "kind": "pii", "on": "input", "action": "mask", "entities": ["email"]}]',
    hint: '[{"name": "pii", "kind": "pii", "on": "both", "action": "mask", "entities": ["email", "phone", "credit_card"]}]; also "regex" with "patterns", "webhook" with "url", "failOpen". See docs/policy.md.',
  },
]

const CACHE_TTL_MAX = 2_592_000

/** A field's value in the policy (a dotted key reads the object field's own field). */
function valueAt(policy: Record<string, unknown>, key: string): unknown {
  const [head, sub] = key.split('.') as [string, string | undefined]
  const v = policy[head]
  return sub === undefined ? v : typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[sub] : undefined
}

/** What the form can tell before asking the server: the cache's settings go together. */
function checkCache(cache: Record<string, unknown> | undefined): void {
  if (!cache) return
  if (cache.mode === undefined) throw new Error('Response cache: choose off or exact (a TTL needs a mode).')
  const ttl = cache.ttlSeconds
  if (ttl === undefined) throw new Error('Response cache: set the TTL in seconds, from 1 to 2,592,000.')
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > CACHE_TTL_MAX)
    throw new Error(`Cache TTL must be whole seconds from 1 to 2,592,000 (30 days), not "${String(ttl)}".`)
}

const asText = (kind: FieldKind, v: unknown) =>
  v === undefined ? '' : kind === 'json' ? JSON.stringify(v) : Array.isArray(v) ? v.join(', ') : String(v)

/** Form text → the policy value; whatever does not parse is sent as typed, so the server's message explains it. */
function fromText(kind: FieldKind, text: string, label = '', example = ''): unknown {
  const t = text.trim()
  if (t === '') return undefined
  if (kind === 'list')
    return t
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
  if (kind === 'boolean') return t === 'true'
  if (kind === 'choice') return t
  if (kind === 'json') {
    try {
      return JSON.parse(t)
    } catch {
      throw new Error(`${label.replace(' (JSON)', '')} must be JSON, e.g. ${example}`)
    }
  }
  return /^-?\d+(\.\d+)?$/.test(t) ? Number(t) : t
}

/** A setting as a viewer sees it: its JSON, no form. */
function ReadOnly({ title, value }: { title: string; value: unknown }) {
  return (
    <Section title={title}>
      <pre aria-label={title}>{value === null ? 'not set' : JSON.stringify(value, null, 2)}</pre>
    </Section>
  )
}

export function SettingsPage({ org }: { org: string }) {
  const detail = useLoad(() => get<OrgDetail>(orgPath(org)), [org])
  const { canChange } = useAccess()
  return (
    <div class="stack">
      <h1>Policy &amp; access</h1>
      <ErrorNote error={detail.error} />
      {detail.data && (canChange ? <PolicyForm org={org} policy={detail.data.policy} reload={detail.reload} /> : <ReadOnly title="Policy" value={detail.data.policy} />)}
      {detail.data && (canChange ? <OidcForm org={org} oidc={detail.data.oidc} reload={detail.reload} /> : <ReadOnly title="OIDC (Bearer tokens)" value={detail.data.oidc} />)}
      <Routes org={org} />
    </div>
  )
}

function PolicyForm({ org, policy, reload }: { org: string; policy: Record<string, unknown>; reload: () => void }) {
  const [values, setValues] = useState(() => Object.fromEntries(POLICY_FIELDS.map((f) => [f.key, asText(f.kind, valueAt(policy, f.key))])))
  const [saved, setSaved] = useState(false)
  const [error, busy, run] = useAction()
  const save = (e: Event) => {
    e.preventDefault()
    setSaved(false)
    return run(async () => {
      // Fields this form does not know (added by a newer gw) are kept as they are.
      const next: Record<string, unknown> = { ...policy }
      const objects = new Map<string, Record<string, unknown>>()
      for (const f of POLICY_FIELDS) {
        const v = fromText(f.kind, values[f.key] ?? '', f.label, f.example)
        const [head, sub] = f.key.split('.') as [string, string | undefined]
        if (sub !== undefined) {
          if (!objects.has(head)) objects.set(head, {})
          if (v !== undefined) (objects.get(head) as Record<string, unknown>)[sub] = v
        } else if (v === undefined) delete next[f.key]
        else next[f.key] = v
      }
      for (const [head, obj] of objects)
        if (Object.keys(obj).length) next[head] = obj
        else delete next[head]
      checkCache(next.cache as Record<string, unknown> | undefined)
      await api('PUT', orgPath(org, '/policy'), next)
      setSaved(true)
      reload()
    })
  }
  return (
    <Section title="Policy">
      <form class="grid-form" onSubmit={save} aria-label="Policy">
        {POLICY_FIELDS.map((f) => (
          <Field label={f.label} hint={f.hint} key={f.key}>
            {f.kind === 'choice' ? (
              <select name={f.key} value={values[f.key]} onChange={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}>
                <option value="">not set</option>
                {f.options?.map((o) => (
                  <option value={o} key={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : f.kind === 'boolean' ? (
              <select name={f.key} value={values[f.key]} onChange={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}>
                <option value="">not set</option>
                <option value="true">allowed</option>
                <option value="false">refused</option>
              </select>
            ) : f.kind === 'json' ? (
              <textarea name={f.key} rows={f.key === 'guardrails' ? 6 : 3} value={values[f.key]} onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })} />
            ) : (
              <input
                name={f.key}
                inputMode={f.kind === 'number' ? 'numeric' : undefined}
                value={values[f.key]}
                onInput={(e) => setValues({ ...values, [f.key]: e.currentTarget.value })}
              />
            )}
          </Field>
        ))}
        <SubmitRow label="Save policy" busy={busy} saved={saved} />
      </form>
      <ErrorNote error={error} />
    </Section>
  )
}

function OidcForm({ org, oidc, reload }: { org: string; oidc: OrgDetail['oidc']; reload: () => void }) {
  const [v, setV] = useState({ issuer: oidc?.issuer ?? '', audience: oidc?.audience ?? '', jwksUri: oidc?.jwksUri ?? '', orgClaim: oidc?.orgClaim ?? '' })
  const [saved, setSaved] = useState(false)
  const [error, busy, run] = useAction()
  const save = (e: Event) => {
    e.preventDefault()
    setSaved(false)
    return run(async () => {
      await api('PUT', orgPath(org, '/oidc'), {
        issuer: v.issuer,
        audience: v.audience,
        ...(v.jwksUri ? { jwksUri: v.jwksUri } : {}),
        ...(v.orgClaim ? { orgClaim: v.orgClaim } : {}),
      })
      setSaved(true)
      reload()
    })
  }
  const input = (k: keyof typeof v) => (e: Event) => setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value })
  return (
    <Section title="OIDC (Bearer tokens from your identity provider)">
      {!oidc && <p class="hint">Not configured: Bearer tokens are refused for this org until an issuer is set.</p>}
      <form class="grid-form" onSubmit={save} aria-label="OIDC">
        <Field label="Issuer">
          <input value={v.issuer} onInput={input('issuer')} placeholder="https://id.example.com" required />
        </Field>
        <Field label="Audience">
          <input value={v.audience} onInput={input('audience')} required />
        </Field>
        <Field label="JWKS URI (optional)" hint="Discovered from the issuer when empty.">
          <input value={v.jwksUri} onInput={input('jwksUri')} />
        </Field>
        <Field label="Org claim (optional)" hint="A claim naming the org; empty: the issuer belongs to this org.">
          <input value={v.orgClaim} onInput={input('orgClaim')} />
        </Field>
        <SubmitRow label="Save OIDC" busy={busy} saved={saved} />
      </form>
      <ErrorNote error={error} />
    </Section>
  )
}

/** Routes (PRODUCT §13): one name, several deployments. Listed, set and deleted. */
function Routes({ org }: { org: string }) {
  const routes = useLoad(() => get<{ data: Route[] }>(orgPath(org, '/routes')), [org])
  const [v, setV] = useState({ name: '', targets: '', strategy: 'weighted', fallback: '' })
  const [error, busy, run] = useAction()
  const list = routes.data?.data ?? []
  const save = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      const targets = v.targets
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)
        .map((t) => {
          const eq = t.lastIndexOf('=')
          return eq < 0 ? { model: t } : { model: t.slice(0, eq), weight: Number(t.slice(eq + 1)) }
        })
      const fallback = v.fallback
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean)
        .map((model) => ({ model }))
      await api('PUT', orgPath(org, `/routes/${encodeURIComponent(v.name)}`), { targets, strategy: v.strategy, fallback })
      routes.reload()
    })
  }
  const remove = (name: string) =>
    run(async () => {
      if (!confirm(`Delete route ${name}? Requests naming it get an unknown-model error.`)) return
      await api('DELETE', orgPath(org, `/routes/${encodeURIComponent(name)}`))
      routes.reload()
    })
  const input = (k: keyof typeof v) => (e: Event) => setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value })
  return (
    <Section title="Routes">
      <p class="hint">
        A route is a model name of this org's own: <code>"model": "fast"</code> picks one of its targets by strategy, then falls back like a fallback chain.
      </p>
      <ErrorNote error={routes.error} />
      {routes.data && list.length === 0 && <Empty title="No routes yet — define one below to spread a model name over several deployments." />}
      {list.length > 0 && (
        <table aria-label="Routes">
          <thead>
            <tr>
              <th>Name</th>
              <th>Strategy</th>
              <th>Targets (weight)</th>
              <th>Fallback</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.name}>
                <td>
                  <code>{r.name}</code>
                </td>
                <td>{r.strategy}</td>
                <td>{r.targets.map((t) => `${t.model} (${t.weight})`).join(', ')}</td>
                <td>{r.fallback.map((f) => f.model).join(', ') || '—'}</td>
                <DangerCell label="Delete" onClick={() => remove(r.name)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <IfCanChange>
      <form class="grid-form" onSubmit={save} aria-label="Set a route">
        <Field label="Route name">
          <input value={v.name} onInput={input('name')} required placeholder="fast" />
        </Field>
        <Field label="Targets" hint="provider/model=weight, comma-separated">
          <input value={v.targets} onInput={input('targets')} placeholder="openai/gpt-4o-mini=3, mistral/mistral-small-latest=1" />
        </Field>
        <Field label="Strategy">
          <select value={v.strategy} onChange={input('strategy')}>
            <option value="weighted">weighted</option>
            <option value="lowest-latency">lowest-latency</option>
          </select>
        </Field>
        <Field label="Fallback (optional)" hint="provider/model, comma-separated">
          <input value={v.fallback} onInput={input('fallback')} />
        </Field>
        <button type="submit" disabled={busy}>
          Save route
        </button>
      </form>
      </IfCanChange>
      <ErrorNote error={error} />
    </Section>
  )
}
