// Logs: a server-side paged table with filters, a live tail, and one entry's detail (attempts, usage, cost, timings, bodies).

import { useEffect, useRef, useState } from 'preact/hooks'
import { get, orgPath, query } from '../api'
import { Empty, ErrorNote, fmtInt, fmtMs, fmtTime, fmtUsd, JsonView, messageOf, Section, useLoad } from '../components'
import type { LogEntry, Page } from '../types'
import { NoRequests } from './overview'

interface Filters {
  since: string
  until: string
  model: string
  provider: string
  status: string
  user: string
  metadata: string
}

const NO_FILTERS: Filters = { since: '', until: '', model: '', provider: '', status: '', user: '', metadata: '' }
const PAGE_SIZE = 50

/** Filters → the §9 query (datetime-local values are local times; metadata is `k=v, k2=v2`). */
function toQuery(f: Filters, extra: Record<string, string | number | undefined> = {}) {
  const iso = (v: string) => (v ? new Date(v).toISOString() : undefined)
  const metadata = f.metadata
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
  return query({ since: iso(f.since), until: iso(f.until), model: f.model.trim(), provider: f.provider, status: f.status, user: f.user.trim(), metadata, limit: PAGE_SIZE, ...extra })
}

export function LogsPage({ org, selected }: { org: string; selected: string | undefined }) {
  const [draft, setDraft] = useState(NO_FILTERS)
  const [filters, setFilters] = useState(NO_FILTERS)
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined])
  const [tail, setTail] = useState(false)
  const [tailError, setTailError] = useState<string>()
  const cursor = cursors[cursors.length - 1]
  const page = useLoad(() => get<Page<LogEntry>>(orgPath(org, `/logs${toQuery(filters, { cursor })}`)), [org, filters, cursor])
  const [fresh, setFresh] = useState<LogEntry[]>([])
  useEffect(() => setFresh([]), [org, filters, cursor])

  // Live tail: every 2 s, the entries newer than the newest shown, on top.
  const newest = useRef<string | undefined>(undefined)
  newest.current = fresh[0]?.createdAt ?? page.data?.data[0]?.createdAt
  useEffect(() => {
    if (!tail) return
    const timer = setInterval(async () => {
      try {
        const since = newest.current ? new Date(Date.parse(newest.current)).toISOString() : new Date(Date.now() - 60_000).toISOString()
        const r = await get<Page<LogEntry>>(orgPath(org, `/logs${toQuery({ ...filters, since, until: '' })}`))
        setFresh((old) => {
          const seen = new Set([...old, ...(page.data?.data ?? [])].map((e) => e.requestId))
          return [...r.data.filter((e) => !seen.has(e.requestId)), ...old]
        })
        setTailError(undefined)
      } catch (e) {
        setTailError(messageOf(e))
      }
    }, 2000)
    return () => clearInterval(timer)
  }, [tail, org, filters, page.data])

  const set = (k: keyof Filters) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value })
  const apply = (e: Event) => {
    e.preventDefault()
    setFilters(draft)
    setCursors([undefined])
  }
  const rows = [...fresh, ...(page.data?.data ?? [])]
  const filtered = Object.values(filters).some(Boolean)
  return (
    <div class="stack">
      <div class="toolbar">
        <h1>Logs</h1>
        <label class="switch">
          <input type="checkbox" checked={tail} onChange={(e) => setTail(e.currentTarget.checked)} /> Live tail
        </label>
      </div>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <label class="field">
          <span>Since</span>
          <input type="datetime-local" name="since" value={draft.since} onInput={set('since')} />
        </label>
        <label class="field">
          <span>Until</span>
          <input type="datetime-local" name="until" value={draft.until} onInput={set('until')} />
        </label>
        <label class="field">
          <span>Model</span>
          <input name="model" placeholder="openai/gpt-4o-mini" value={draft.model} onInput={set('model')} />
        </label>
        <label class="field">
          <span>Provider</span>
          <select name="provider" value={draft.provider} onChange={set('provider')}>
            <option value="">any</option>
            {['openai', 'anthropic', 'google', 'mistral'].map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Status</span>
          <input name="status" list="statuses" placeholder="success, error, 429…" value={draft.status} onInput={set('status')} />
          <datalist id="statuses">
            <option value="success" />
            <option value="error" />
          </datalist>
        </label>
        <label class="field">
          <span>User</span>
          <input name="user" value={draft.user} onInput={set('user')} />
        </label>
        <label class="field">
          <span>Metadata</span>
          <input name="metadata" placeholder="team=search, env=prod" value={draft.metadata} onInput={set('metadata')} />
        </label>
        <div class="row end">
          <button type="submit">Apply</button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft(NO_FILTERS)
              setFilters(NO_FILTERS)
              setCursors([undefined])
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <ErrorNote error={page.error ?? tailError} />
      {selected && <LogDetail org={org} id={selected} />}
      {page.data && rows.length === 0 && (filtered || cursor ? <Empty title="No entries match these filters." /> : <NoRequests org={org} />)}
      {rows.length > 0 && (
        <table class="logs">
          <thead>
            <tr>
              <th>Time</th>
              <th>Status</th>
              <th>Endpoint</th>
              <th>Model</th>
              <th class="num">Latency</th>
              <th class="num">Tokens</th>
              <th class="num">Cost</th>
              <th>Error</th>
              <th>Fallback</th>
              <th>User</th>
              <th>Request id</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr key={e.requestId} class={e.requestId === selected ? 'selected' : ''}>
                <td>{fmtTime(e.createdAt)}</td>
                <td>
                  <span class={`status ${e.status >= 400 ? 'bad' : 'ok'}`}>{e.status}</span>
                </td>
                <td>{e.endpoint}</td>
                <td>{e.model ?? e.requestedModel ?? '—'}</td>
                <td class="num">{fmtMs(e.latencyMs)}</td>
                <td class="num">{fmtInt(e.usage.totalTokens)}</td>
                <td class="num">{fmtUsd(e.costUsd)}</td>
                <td>{e.errorCode ?? '—'}</td>
                <td>{e.fallback.used ? `${e.fallback.reason ?? ''} → ${e.fallback.model ?? ''}` : '—'}</td>
                <td>{e.endUserId ?? e.user ?? '—'}</td>
                <td>
                  <a href={`#/logs/${encodeURIComponent(e.requestId)}`}>{e.requestId}</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="row">
        <button type="button" class="secondary" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <button type="button" class="secondary" disabled={!page.data?.nextCursor} onClick={() => setCursors([...cursors, page.data?.nextCursor ?? undefined])}>
          Older →
        </button>
      </div>
    </div>
  )
}

function LogDetail({ org, id }: { org: string; id: string }) {
  const entry = useLoad(() => get<LogEntry>(orgPath(org, `/logs/${encodeURIComponent(id)}`)), [org, id])
  const close = () => {
    location.hash = '#/logs'
  }
  const box = useRef<HTMLElement>(null)
  useEffect(() => {
    box.current?.focus()
    box.current?.scrollIntoView({ block: 'start' })
  }, [id])
  useEffect(() => {
    const on = (e: KeyboardEvent) => e.key === 'Escape' && close()
    addEventListener('keydown', on)
    return () => removeEventListener('keydown', on)
  }, [])
  const e = entry.data
  return (
    <aside class="drawer" aria-label="Log entry" ref={box} tabIndex={-1}>
      <div class="toolbar">
        <h2>Request {id}</h2>
        <button type="button" class="secondary" onClick={close}>
          Close (Esc)
        </button>
      </div>
      <ErrorNote error={entry.error} />
      {e && (
        <div class="stack">
          <dl class="facts">
            <dt>Time</dt>
            <dd>{fmtTime(e.createdAt)}</dd>
            <dt>Status</dt>
            <dd>
              {e.status}
              {e.errorCode ? ` ${e.errorCode}` : ''}
              {e.errorMessage ? ` — ${e.errorMessage}` : ''}
            </dd>
            <dt>Endpoint</dt>
            <dd>{e.endpoint}</dd>
            <dt>Auth</dt>
            <dd>
              {e.authMode ?? '—'} {e.subject ?? ''}
            </dd>
            <dt>Model</dt>
            <dd>
              {e.model ?? '—'} {e.requestedModel && e.requestedModel !== e.model ? `(asked for ${e.requestedModel})` : ''}
            </dd>
            {e.mcp && (
              <>
                <dt>MCP tool</dt>
                <dd>
                  {e.mcp.tool} on the server {e.mcp.server}
                </dd>
              </>
            )}
            <dt>Provider</dt>
            <dd>{e.provider ?? '—'}</dd>
            <dt>Stream</dt>
            <dd>{e.stream ? 'yes' : 'no'}</dd>
            <dt>Fallback</dt>
            <dd>{e.fallback.used ? `used: ${e.fallback.reason ?? ''} → ${e.fallback.model ?? ''}` : 'not used'}</dd>
            <dt>Usage</dt>
            <dd>
              {fmtInt(e.usage.promptTokens)} prompt ({fmtInt(e.usage.cachedTokens)} cached) + {fmtInt(e.usage.completionTokens)} completion ={' '}
              {fmtInt(e.usage.totalTokens)} tokens{e.usage.estimated ? ' (estimated)' : ''}
            </dd>
            <dt>Cost</dt>
            <dd>{e.costUsd === null ? 'unknown price' : fmtUsd(e.costUsd)}</dd>
            {e.cache && (
              <>
                <dt>Response cache</dt>
                <dd>
                  {e.cache === 'hit'
                    ? `hit: answered from the cache, saving ${e.costSavedUsd == null ? 'an unknown cost' : fmtUsd(e.costSavedUsd)}`
                    : e.cache === 'refresh'
                      ? 'refreshed (x-gw-cache: refresh)'
                      : 'miss'}
                </dd>
              </>
            )}
            {e.guardrails?.length ? (
              <>
                <dt>Guardrails</dt>
                <dd>
                  {e.guardrails.map((g) => (
                    <span class="tag" key={`${g.name}:${g.action}`}>{`${g.name}: ${g.action}${g.entities.length ? ` (${g.entities.join(', ')})` : ''}`}</span>
                  ))}
                </dd>
              </>
            ) : null}
            <dt>Timings</dt>
            <dd>
              total {fmtMs(e.latencyMs)}, upstream {fmtMs(e.upstreamLatencyMs)}
              {e.stream ? `, first token ${fmtMs(e.ttftMs)}` : ''}
            </dd>
            <dt>User</dt>
            <dd>{e.endUserId ?? e.user ?? '—'}</dd>
            {e.promptSlug && (
              <>
                <dt>Prompt</dt>
                <dd>
                  {e.promptSlug} v{e.promptVersion}
                </dd>
              </>
            )}
            <dt>Metadata</dt>
            <dd>{Object.keys(e.metadata).length ? Object.entries(e.metadata).map(([k, v]) => <span class="tag" key={k}>{`${k}=${v}`}</span>) : '—'}</dd>
            <dt>Warnings</dt>
            <dd>{e.warnings.length ? e.warnings.join('; ') : '—'}</dd>
          </dl>
          <Section title="Attempts">
            <table>
              <thead>
                <tr>
                  <th>#</th>
                  <th>Model</th>
                  <th>Outcome</th>
                  <th>Status</th>
                  <th class="num">Latency</th>
                  <th>Message</th>
                </tr>
              </thead>
              <tbody>
                {e.attempts.map((a, i) => (
                  <tr key={i}>
                    <td>{i + 1}</td>
                    <td>{a.model}</td>
                    <td>
                      <span class={`status ${a.outcome === 'ok' ? 'ok' : 'bad'}`}>{a.outcome}</span>
                    </td>
                    <td>{a.status ?? '—'}</td>
                    <td class="num">{fmtMs(a.latencyMs)}</td>
                    <td>{a.message ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {e.attempts.length === 0 && <Empty title="No upstream attempt (refused before routing)." />}
          </Section>
          <Section title="Request body">{e.requestBody === undefined ? <Empty title="Not stored (GW_LOG_BODIES is off)." /> : <JsonView value={e.requestBody} />}</Section>
          <Section title="Response body">{e.responseBody === undefined ? <Empty title="Not stored." /> : <JsonView value={e.responseBody} />}</Section>
        </div>
      )}
    </aside>
  )
}
