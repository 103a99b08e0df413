// Providers on the Keys page: the org's provider records of every kind (listed, set, removed); secrets are write-only.

import { useState } from 'preact/hooks'
import { api, orgPath } from '../api'
import { DangerCell, Empty, ErrorNote, Field, fmtTime, IfCanChange, Section, SubmitRow, useAction } from '../components'
import { DEFAULT_QUIRKS, PRESET_NAMES, presetOf, type Quirks } from '../../providers/openai-compatible'
import type { OrgDetail, ProviderInfo } from '../types'

type Kind = NonNullable<ProviderInfo['kind']>
const KINDS: { kind: Kind; label: string }[] = [
  { kind: 'openai-compatible', label: 'OpenAI-compatible' },
  { kind: 'azure', label: 'Azure OpenAI' },
  { kind: 'bedrock', label: 'AWS Bedrock' },
  { kind: 'vertex', label: 'Google Vertex AI' },
]

/** Where a record sends its requests, per kind. */
function endpointOf(p: ProviderInfo): string {
  if (p.kind === 'bedrock') return p.baseUrl ? `${p.region} (${p.baseUrl})` : (p.region ?? '—')
  if (p.kind === 'vertex') return `${p.project} / ${p.location}`
  return p.baseUrl ?? '—'
}

/** The masked credential the server answered (never the secret): a Vertex key is `****`. */
function keyOf(p: ProviderInfo): string {
  if (p.kind === 'bedrock') return p.auth === 'sigv4' ? `${p.accessKeyId} (access key)` : `${p.apiKey} (API key)`
  return p.apiKey
}

/** A JSON object typed in a textarea, or undefined when empty; a parse failure names the field. */
function jsonField(label: string, text: string): Record<string, string> | undefined {
  if (!text.trim()) return undefined
  try {
    return JSON.parse(text) as Record<string, string>
  } catch {
    throw new Error(`${label}: not valid JSON`)
  }
}

/** The quirks that differ from what the server would complete (a preset's, else the defaults): a preset keeps its own. */
function changedQuirks(name: string, q: Quirks): Partial<Quirks> | undefined {
  const base: Quirks = { ...DEFAULT_QUIRKS, ...presetOf(name)?.quirks }
  const changed = Object.fromEntries(Object.entries(q).filter(([k, v]) => base[k as keyof Quirks] !== v))
  return Object.keys(changed).length ? changed : undefined
}

const listOf = (text: string) =>
  text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean)

export function Providers({ org, detail, reload }: { org: string; detail: OrgDetail; reload: () => void }) {
  const list = detail.providers.filter((p) => p.kind)
  const [error, , run] = useAction()
  const remove = (p: ProviderInfo) =>
    run(async () => {
      if (!confirm(`Remove the provider "${p.provider}"? Requests to its models fail from now on.`)) return
      await api('DELETE', orgPath(org, `/providers/${encodeURIComponent(p.provider)}/keys/${encodeURIComponent(p.name)}`))
      reload()
    })
  return (
    <Section title="Providers">
      <p class="hint">
        OpenAI-compatible servers (presets or any base URL), Azure OpenAI, AWS Bedrock and Google Vertex AI; a provider's models are called as{' '}
        <code>name/model</code>. Secrets are write-only: set them again to change them.
      </p>
      {list.length === 0 ? (
        <Empty title="No providers of these kinds yet — set one below." />
      ) : (
        <table aria-label="Providers">
          <thead>
            <tr>
              <th>Name</th>
              <th>Kind</th>
              <th>Base URL / region / project</th>
              <th>Models</th>
              <th>Key</th>
              <th>Enabled</th>
              <th>Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((p) => (
              <tr key={`${p.provider}/${p.name}`}>
                <td>{p.provider}</td>
                <td>{p.kind}</td>
                <td>{endpointOf(p)}</td>
                <td>{p.models?.length ? p.models.join(', ') : p.deployments && Object.keys(p.deployments).length ? Object.keys(p.deployments).join(', ') : '—'}</td>
                <td>
                  <code>{keyOf(p)}</code>
                </td>
                <td>{p.enabled ? 'yes' : 'no'}</td>
                <td>{fmtTime(p.updatedAt)}</td>
                <DangerCell label="Remove" aria={`Remove provider ${p.provider}`} onClick={() => remove(p)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorNote error={error} />
      <IfCanChange>
        <ProviderForm org={org} reload={reload} />
      </IfCanChange>
    </Section>
  )
}

/** The form's non-secret fields, and the secret ones (never pre-filled, cleared after a save). */
const BLANK = { name: '', baseUrl: '', headers: '', models: '', apiVersion: '', deployments: '', region: '', accessKeyId: '', project: '', location: '' }
const NO_SECRETS = { apiKey: '', secretAccessKey: '', sessionToken: '', serviceAccountKey: '' }

function ProviderForm({ org, reload }: { org: string; reload: () => void }) {
  const [kind, setKind] = useState<Kind>('openai-compatible')
  const [f, setF] = useState(BLANK)
  const [secret, setSecret] = useState(NO_SECRETS)
  const [quirks, setQuirks] = useState<Quirks>(DEFAULT_QUIRKS)
  const [enabled, setEnabled] = useState(true)
  const [saved, setSaved] = useState(false)
  const [error, busy, run] = useAction()
  const text = (k: keyof typeof BLANK) => ({ value: f[k], onInput: (e: { currentTarget: { value: string } }) => setF({ ...f, [k]: e.currentTarget.value }) })
  const hidden = (k: keyof typeof NO_SECRETS) => ({
    value: secret[k],
    autocomplete: 'off',
    onInput: (e: { currentTarget: { value: string } }) => setSecret({ ...secret, [k]: e.currentTarget.value }),
  })
  const pickPreset = (name: string) => {
    setF({ ...f, name })
    setQuirks({ ...DEFAULT_QUIRKS, ...presetOf(name)?.quirks })
  }
  const opt = (v: string) => (v.trim() ? v.trim() : undefined)
  const bodyOf = (): Record<string, unknown> => {
    const models = listOf(f.models)
    const common = { kind, enabled }
    if (kind === 'openai-compatible')
      return { ...common, baseUrl: opt(f.baseUrl), apiKey: opt(secret.apiKey), headers: jsonField('Extra headers', f.headers), models: models.length ? models : undefined, quirks: changedQuirks(f.name.trim(), quirks) }
    if (kind === 'azure')
      return { ...common, baseUrl: f.baseUrl.trim(), apiKey: secret.apiKey, apiVersion: opt(f.apiVersion), deployments: jsonField('Deployments', f.deployments), models: models.length ? models : undefined }
    if (kind === 'bedrock')
      return { ...common, region: f.region.trim(), accessKeyId: opt(f.accessKeyId), secretAccessKey: opt(secret.secretAccessKey), sessionToken: opt(secret.sessionToken), apiKey: opt(secret.apiKey) }
    return { ...common, project: f.project.trim(), location: f.location.trim(), serviceAccountKey: secret.serviceAccountKey }
  }
  const save = (e: Event) => {
    e.preventDefault()
    setSaved(false)
    return run(async () => {
      await api('PUT', orgPath(org, `/providers/${encodeURIComponent(f.name.trim())}`), bodyOf())
      setSecret(NO_SECRETS)
      setSaved(true)
      reload()
    })
  }
  const quirkBox = (k: 'streamUsage' | 'tools', label: string) => (
    <label class="switch">
      <input type="checkbox" checked={quirks[k]} onChange={(e) => setQuirks({ ...quirks, [k]: e.currentTarget.checked })} /> {label}
    </label>
  )
  const quirkPick = <K extends 'jsonSchema' | 'maxTokensField' | 'systemRole'>(k: K, label: string, values: Quirks[K][]) => (
    <Field label={label}>
      <select value={quirks[k]} onChange={(e) => setQuirks({ ...quirks, [k]: e.currentTarget.value as Quirks[K] })}>
        {values.map((v) => (
          <option key={v}>{v}</option>
        ))}
      </select>
    </Field>
  )
  return (
    <form class="grid-form" onSubmit={save} aria-label="Set a provider">
      <Field label="Kind">
        <select value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
          {KINDS.map((k) => (
            <option key={k.kind} value={k.kind}>
              {k.label}
            </option>
          ))}
        </select>
      </Field>
      {kind === 'openai-compatible' && (
        <Field label="Preset">
          <select value={presetOf(f.name) ? f.name : ''} onChange={(e) => pickPreset(e.currentTarget.value)}>
            <option value="">(none — any server)</option>
            {PRESET_NAMES.map((p) => (
              <option key={p} value={p}>
                {presetOf(p)?.label}
              </option>
            ))}
          </select>
        </Field>
      )}
      <Field label="Name" hint="the model prefix: lowercase letters, digits and -">
        <input {...text('name')} required placeholder="my-llm" />
      </Field>
      {kind === 'openai-compatible' && (
        <>
          <Field label="Base URL" hint="…/v1; a preset's when empty">
            <input {...text('baseUrl')} placeholder={presetOf(f.name)?.baseUrl ?? 'https://…/v1'} />
          </Field>
          <Field label="API key (optional)">
            <input type="password" {...hidden('apiKey')} />
          </Field>
          <Field label="Extra headers (JSON)">
            <textarea {...text('headers')} rows={2} placeholder='{"x-tenant": "blue"}' />
          </Field>
          <Field label="Models" hint="comma-separated, listed by /v1/models">
            <input {...text('models')} placeholder="llama3.2, qwen2.5" />
          </Field>
          {quirkBox('streamUsage', 'Reports stream usage')}
          {quirkBox('tools', 'Takes tools')}
          {quirkPick('jsonSchema', 'Structured output', ['json_schema', 'json_object', 'none'])}
          {quirkPick('maxTokensField', 'Output limit field', ['max_tokens', 'max_completion_tokens'])}
          {quirkPick('systemRole', 'System messages as', ['system', 'user'])}
        </>
      )}
      {kind === 'azure' && (
        <>
          <Field label="Base URL">
            <input {...text('baseUrl')} required placeholder="https://<resource>.openai.azure.com" />
          </Field>
          <Field label="API key">
            <input type="password" {...hidden('apiKey')} required />
          </Field>
          <Field label="API version (optional)" hint="set: the deployment API; empty: the v1 API">
            <input {...text('apiVersion')} placeholder="2024-10-21" />
          </Field>
          <Field label="Deployments (JSON)" hint="model id → deployment name">
            <textarea {...text('deployments')} rows={2} placeholder='{"gpt-4o": "prod-4o"}' />
          </Field>
          <Field label="Models" hint="comma-separated">
            <input {...text('models')} />
          </Field>
        </>
      )}
      {kind === 'bedrock' && (
        <>
          <Field label="Region">
            <input {...text('region')} required placeholder="us-east-1" />
          </Field>
          <Field label="Access key id">
            <input {...text('accessKeyId')} autocomplete="off" />
          </Field>
          <Field label="Secret access key">
            <input type="password" {...hidden('secretAccessKey')} />
          </Field>
          <Field label="Session token (optional)">
            <input type="password" {...hidden('sessionToken')} />
          </Field>
          <Field label="Bedrock API key" hint="instead of access keys">
            <input type="password" {...hidden('apiKey')} />
          </Field>
        </>
      )}
      {kind === 'vertex' && (
        <>
          <Field label="Project">
            <input {...text('project')} required />
          </Field>
          <Field label="Location">
            <input {...text('location')} required placeholder="us-central1" />
          </Field>
          <Field label="Service-account key (JSON)">
            <textarea {...hidden('serviceAccountKey')} rows={4} required />
          </Field>
        </>
      )}
      <label class="switch">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      <SubmitRow label="Save provider" busy={busy} saved={saved} />
      <ErrorNote error={error} />
    </form>
  )
}
