// Prompts: the list, one prompt's versions side by side with a diff, publishing, new versions, and a streaming playground.

import { useEffect, useState } from 'preact/hooks'
import { api, get, orgPath, query, readEvents, request } from '../api'
import { Empty, ErrorNote, Field, fmtInt, fmtTime, fmtUsd, IfCanChange, messageOf, Section, useAction, useLoad } from '../components'
import { sideBySide } from '../diff'
import type { PromptDetail, PromptSummary, PromptVersionInfo } from '../types'

export function PromptsPage({ org, slug }: { org: string; slug: string | undefined }) {
  return slug ? <PromptView org={org} slug={slug} /> : <PromptList org={org} />
}

function PromptList({ org }: { org: string }) {
  const prompts = useLoad(() => get<{ data: PromptSummary[] }>(orgPath(org, '/prompts')), [org])
  const [slug, setSlug] = useState('')
  const [name, setName] = useState('')
  const [error, busy, run] = useAction()
  const create = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      await api('POST', orgPath(org, '/prompts'), { slug, ...(name ? { name } : {}) })
      location.hash = `#/prompts/${encodeURIComponent(slug)}`
    })
  }
  const list = prompts.data?.data ?? []
  return (
    <div class="stack">
      <h1>Prompts</h1>
      <ErrorNote error={prompts.error} />
      {prompts.data && list.length === 0 && (
        <Empty title="No saved prompts yet.">
          <p>
            Create one below, or put Markdown files in <code>GW_PROMPTS_DIR</code> (prompts as code).
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <table aria-label="Prompts">
          <thead>
            <tr>
              <th>Slug</th>
              <th>Name</th>
              <th class="num">Published</th>
              <th class="num">Latest</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {list.map((p) => (
              <tr key={p.id}>
                <td>
                  <a href={`#/prompts/${encodeURIComponent(p.slug)}`}>{p.slug}</a>
                </td>
                <td>{p.name ?? '—'}</td>
                <td class="num">{p.publishedVersion ?? '—'}</td>
                <td class="num">{p.currentVersion ?? '—'}</td>
                <td>{fmtTime(p.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <IfCanChange>
      <Section title="New prompt">
        <form class="row" onSubmit={create} aria-label="New prompt">
          <Field label="Slug">
            <input value={slug} onInput={(e) => setSlug(e.currentTarget.value)} required placeholder="support-reply" />
          </Field>
          <Field label="Name (optional)">
            <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <button type="submit" disabled={busy}>
            Create prompt
          </button>
        </form>
        <ErrorNote error={error} />
      </Section>
      </IfCanChange>
    </div>
  )
}

/** A version as lines, for the diff. */
function linesOf(v: PromptVersionInfo): string[] {
  const vars = v.variables.map((x) => `${x.name}: ${x.type}${x.required ? ' (required)' : ''}`).join(', ')
  return [
    `model: ${v.model}`,
    `temperature: ${v.temperature ?? '—'}`,
    `max tokens: ${v.maxTokens ?? '—'}`,
    `variables: ${vars || '—'}`,
    '── system ──',
    ...(v.systemTemplate ?? '').split('\n'),
    '── user ──',
    ...v.userTemplate.split('\n'),
  ]
}

function PromptView({ org, slug }: { org: string; slug: string }) {
  const prompt = useLoad(() => get<PromptDetail>(orgPath(org, `/prompts/${encodeURIComponent(slug)}`)), [org, slug])
  const p = prompt.data
  const versions = p?.versions ?? []
  const [left, setLeft] = useState<number>()
  const [right, setRight] = useState<number>()
  useEffect(() => {
    if (!versions.length) return
    const last = (versions[versions.length - 1] as PromptVersionInfo).version
    setRight(last)
    setLeft(p?.publishedVersion && p.publishedVersion !== last ? p.publishedVersion : Math.max(1, last - 1))
  }, [p])
  const [error, busy, run] = useAction()
  const publish = (n: number) =>
    run(async () => {
      await api('POST', orgPath(org, `/prompts/${encodeURIComponent(slug)}/versions/${n}/publish`))
      prompt.reload()
    })
  const a = versions.find((v) => v.version === left)
  const b = versions.find((v) => v.version === right)
  const pick = (set: (n: number) => void, value: number | undefined, label: string) => (
    <select aria-label={label} value={value} onChange={(e) => set(Number(e.currentTarget.value))}>
      {versions.map((v) => (
        <option value={v.version} key={v.version}>
          v{v.version}
          {v.version === p?.publishedVersion ? ' (published)' : ''}
        </option>
      ))}
    </select>
  )
  return (
    <div class="stack">
      <div class="toolbar">
        <h1>
          <a href="#/prompts">Prompts</a> / {slug}
        </h1>
        {p && <span class="hint">published: {p.publishedVersion ? `v${p.publishedVersion}` : 'none'}</span>}
      </div>
      {p?.sourceFile && (
        <p class="note" role="note">
          Managed by the file <code>{p.sourceFile}</code>: gw loads it again at every start, and its content then becomes the newest
          version. Edit the file to keep a change.
        </p>
      )}
      <ErrorNote error={prompt.error ?? error} />
      {p && versions.length === 0 && <Empty title="No versions yet — write the first one below." />}
      {a && b && (
        <Section title="Versions side by side">
          <div class="row">
            {pick(setLeft, left, 'Left version')}
            <span>↔</span>
            {pick(setRight, right, 'Right version')}
          </div>
          <table class="diff" aria-label="Version diff">
            <thead>
              <tr>
                {[a, b].map((v, i) => (
                  <th key={i}>
                    v{v.version} · {fmtTime(v.createdAt)}{' '}
                    {v.version === p?.publishedVersion ? (
                      <span class="status ok">published</span>
                    ) : (
                      <IfCanChange>
                        <button type="button" class="secondary" disabled={busy} onClick={() => publish(v.version)}>
                          Publish v{v.version}
                        </button>
                      </IfCanChange>
                    )}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {sideBySide(linesOf(a), linesOf(b)).map((r, i) => (
                <tr key={i} class={r.kind}>
                  <td>
                    <pre>{r.left ?? ''}</pre>
                  </td>
                  <td>
                    <pre>{r.right ?? ''}</pre>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}
      <IfCanChange>
        {p && versions.length > 0 && <Playground org={org} slug={slug} versions={versions} published={p.publishedVersion} />}
        {p && <NewVersion org={org} slug={slug} base={versions[versions.length - 1]} onSaved={prompt.reload} />}
      </IfCanChange>
    </div>
  )
}

function NewVersion({ org, slug, base, onSaved }: { org: string; slug: string; base: PromptVersionInfo | undefined; onSaved: () => void }) {
  const [v, setV] = useState({
    model: base?.model ?? 'openai/gpt-4o-mini',
    systemTemplate: base?.systemTemplate ?? '',
    userTemplate: base?.userTemplate ?? '',
    variables: JSON.stringify(base?.variables ?? []),
    temperature: base?.temperature === undefined ? '' : String(base.temperature),
    maxTokens: base?.maxTokens === undefined ? '' : String(base.maxTokens),
    publish: false,
  })
  const [error, busy, run] = useAction()
  const [warning, setWarning] = useState<string | undefined>()
  const set = (k: keyof typeof v) => (e: Event) => setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value })
  const num = (s: string) => (s.trim() === '' ? undefined : /^-?\d+(\.\d+)?$/.test(s.trim()) ? Number(s) : s)
  const save = (e: Event) => {
    e.preventDefault()
    return run(async () => {
      let variables: unknown
      try {
        variables = JSON.parse(v.variables || '[]')
      } catch {
        throw new Error('Variables must be JSON, e.g. [{"name": "topic", "type": "string", "required": true}]')
      }
      const saved = await api<{ warning?: string }>('POST', orgPath(org, `/prompts/${encodeURIComponent(slug)}/versions`), {
        model: v.model,
        userTemplate: v.userTemplate,
        variables,
        publish: v.publish,
        ...(v.systemTemplate ? { systemTemplate: v.systemTemplate } : {}),
        ...(num(v.temperature) === undefined ? {} : { temperature: num(v.temperature) }),
        ...(num(v.maxTokens) === undefined ? {} : { maxTokens: num(v.maxTokens) }),
      })
      setWarning(saved.warning)
      onSaved()
    })
  }
  return (
    <Section title="New version">
      <form class="stack" onSubmit={save} aria-label="New version">
        <div class="grid-form">
          <Field label="Model">
            <input value={v.model} onInput={set('model')} required />
          </Field>
          <Field label="Temperature">
            <input value={v.temperature} onInput={set('temperature')} inputMode="decimal" />
          </Field>
          <Field label="Max tokens">
            <input value={v.maxTokens} onInput={set('maxTokens')} inputMode="numeric" />
          </Field>
        </div>
        <Field label="System template">
          <textarea rows={3} value={v.systemTemplate} onInput={set('systemTemplate')} />
        </Field>
        <Field label="User template" hint="{{name}} inserts a variable, {{> partial}} a partial.">
          <textarea rows={4} value={v.userTemplate} onInput={set('userTemplate')} required />
        </Field>
        <Field label="Variables (JSON)">
          <input value={v.variables} onInput={set('variables')} />
        </Field>
        <div class="row">
          <label class="switch">
            <input type="checkbox" checked={v.publish} onChange={(e) => setV({ ...v, publish: e.currentTarget.checked })} /> Publish it
          </label>
          <button type="submit" disabled={busy}>
            Save version
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {warning && (
        <p class="note" role="status">
          Saved. {warning}
        </p>
      )}
    </Section>
  )
}

interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  cost_usd?: number | null
}

function Playground({ org, slug, versions, published }: { org: string; slug: string; versions: PromptVersionInfo[]; published: number | null }) {
  const newest = (versions[versions.length - 1] as PromptVersionInfo).version
  const [version, setVersion] = useState(published ?? newest)
  // A new publication (or a new version) selects what callers now get.
  useEffect(() => setVersion(published ?? newest), [published, newest])
  const current = versions.find((v) => v.version === version)
  const [vars, setVars] = useState<Record<string, string>>({})
  const [answer, setAnswer] = useState('')
  const [usage, setUsage] = useState<Usage>()
  const [requestId, setRequestId] = useState<string | null>(null)
  const [running, setRunning] = useState(false)
  const [error, setError] = useState<string>()
  const runIt = async (e: Event) => {
    e.preventDefault()
    setRunning(true)
    setError(undefined)
    setAnswer('')
    setUsage(undefined)
    try {
      const res = await request('POST', orgPath(org, `/prompts/${encodeURIComponent(slug)}/run${query({ version })}`), {
        variables: vars,
        stream: true,
        stream_options: { include_usage: true },
      })
      setRequestId(res.headers.get('x-gw-request-id'))
      await readEvents(res, (data) => {
        const chunk = data as { choices?: { delta?: { content?: string } }[]; usage?: Usage | null; error?: unknown; message?: string }
        if (chunk.error) setError(chunk.message ?? 'The stream ended with an error')
        const piece = chunk.choices?.[0]?.delta?.content
        if (piece) setAnswer((a) => a + piece)
        if (chunk.usage) setUsage(chunk.usage)
      })
    } catch (err) {
      setError(messageOf(err))
    } finally {
      setRunning(false)
    }
  }
  return (
    <Section title="Playground">
      <form class="stack" onSubmit={runIt} aria-label="Playground">
        <div class="grid-form">
          <Field label="Version">
            <select value={version} onChange={(e) => setVersion(Number(e.currentTarget.value))}>
              {versions.map((v) => (
                <option value={v.version} key={v.version}>
                  v{v.version}
                  {v.version === published ? ' (published)' : ''}
                </option>
              ))}
            </select>
          </Field>
          {current?.variables.map((x) => (
            <Field label={`${x.name} (${x.type}${x.required ? ', required' : ''})`} key={x.name}>
              <input name={`var-${x.name}`} value={vars[x.name] ?? ''} onInput={(e) => setVars({ ...vars, [x.name]: e.currentTarget.value })} />
            </Field>
          ))}
        </div>
        <div class="row">
          <button type="submit" disabled={running}>
            {running ? 'Running…' : 'Run'}
          </button>
          <span class="hint">Runs through the whole gateway as this org (policy, fallbacks, logging).</span>
        </div>
      </form>
      <ErrorNote error={error} />
      {(answer || running) && (
        <output class="answer" aria-live="polite" aria-label="Answer">
          {answer}
          {running && <span class="cursor">▍</span>}
        </output>
      )}
      {usage && (
        <p class="hint">
          {fmtInt(usage.prompt_tokens)} + {fmtInt(usage.completion_tokens)} tokens
          {usage.cost_usd !== undefined && ` · ${usage.cost_usd === null ? 'cost unknown' : fmtUsd(usage.cost_usd)}`}
          {requestId && (
            <>
              {' '}
              · <a href={`#/logs/${encodeURIComponent(requestId)}`}>log entry</a>
            </>
          )}
        </p>
      )}
    </Section>
  )
}
