// Overview: requests, errors, latency, TTFT, tokens and cost over time by model and provider; usage by model, provider, key, end user or a metadata key; budgets.

import { useState } from 'preact/hooks'
import { get, orgPath, query } from '../api'
import { TimeChart } from '../chart'
import { Empty, ErrorNote, fmtInt, fmtMs, fmtRemaining, fmtTime, fmtUsd, Section, useLoad } from '../components'
import type { BudgetStatus, LogStats, ServiceKeyInfo, UsageRow } from '../types'

type Stats = LogStats & { since: number; until: number; bucketMs: number }

const RANGES = [
  { id: '1h', label: 'Last hour', ms: 3_600_000, buckets: 60 },
  { id: '24h', label: 'Last 24 hours', ms: 86_400_000, buckets: 48 },
  { id: '7d', label: 'Last 7 days', ms: 7 * 86_400_000, buckets: 56 },
  { id: '30d', label: 'Last 30 days', ms: 30 * 86_400_000, buckets: 60 },
] as const

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
/** Series keyed by model/provider; the ten busiest, the rest folded into "other". */
function top(stats: Stats, pick: (s: Stats['series'][number]) => number[]) {
  const shown = stats.series.slice(0, 9).map((s) => ({ label: s.key ?? '(none)', values: pick(s) }))
  const rest = stats.series.slice(9)
  if (rest.length) shown.push({ label: 'other', values: stats.buckets.map((_, i) => sum(rest.map((s) => pick(s)[i] ?? 0))) })
  return shown
}

/** Models are `provider/model`: the provider series are sums of the model series (one scan on the server, not two). */
function byProvider(m: Stats): Stats {
  const series = new Map<string | null, Stats['series'][number]>()
  for (const s of m.series) {
    const key = s.key?.split('/')[0] ?? null
    const acc = series.get(key)
    if (!acc) series.set(key, { ...s, key, requests: [...s.requests], errors: [...s.errors], tokens: [...s.tokens], costUsd: [...s.costUsd] })
    else
      for (const f of ['requests', 'errors', 'tokens', 'costUsd'] as const) s[f].forEach((v, i) => ((acc[f][i] as number) += v))
  }
  return { ...m, series: [...series.values()].sort((a, b) => sum(b.requests) - sum(a.requests)) }
}

/** The usage table's groupings (PRODUCT §11); `metadata` asks for the key's name. */
const GROUPINGS = [
  { id: 'model', label: 'Model' },
  { id: 'provider', label: 'Provider' },
  { id: 'key', label: 'Service key' },
  { id: 'endUser', label: 'End user' },
  { id: 'metadata', label: 'Metadata key' },
] as const
type Grouping = (typeof GROUPINGS)[number]['id']

export function OverviewPage({ org }: { org: string }) {
  const [rangeId, setRangeId] = useState<(typeof RANGES)[number]['id']>('24h')
  const [grouping, setGrouping] = useState<Grouping>('model')
  const [metadataKey, setMetadataKey] = useState('')
  const groupBy = grouping === 'metadata' ? (metadataKey ? `metadata.${metadataKey}` : undefined) : grouping
  const range = RANGES.find((r) => r.id === rangeId) ?? RANGES[1]
  const byModel = useLoad(() => {
    const until = Date.now()
    return get<Stats>(orgPath(org, `/stats${query({ since: until - range.ms, until, buckets: range.buckets, by: 'model' })}`))
  }, [org, rangeId])
  const usage = useLoad(async () => {
    if (!groupBy) return { data: [] as UsageRow[] }
    const since = new Date(Date.now() - range.ms).toISOString()
    return get<{ data: UsageRow[] }>(orgPath(org, `/usage${query({ since, groupBy })}`))
  }, [org, rangeId, groupBy])
  const groupLabel = GROUPINGS.find((g) => g.id === grouping)?.label ?? 'Model'
  // Service keys are grouped by id: their names make the rows readable.
  const keys = useLoad(
    async () => (grouping === 'key' ? (await get<{ data: ServiceKeyInfo[] }>(orgPath(org, '/service-keys'))).data : []),
    [org, grouping],
  )
  const rowLabel = (key: string | null) => {
    if (key === null) return '(none)'
    const named = grouping === 'key' ? keys.data?.find((k) => k.id === key)?.name : undefined
    return named ? `${named} (${key})` : key
  }

  const m = byModel.data
  const p = m && byProvider(m)
  const requests = m ? sum(m.series.flatMap((s) => s.requests)) : 0
  const errors = m ? sum(m.series.flatMap((s) => s.errors)) : 0
  const tokens = m ? sum(m.series.flatMap((s) => s.tokens)) : 0
  const cost = m ? sum(m.series.flatMap((s) => s.costUsd)) : 0
  const p95 = m ? Math.max(0, ...m.latencyMs.p95.map((v) => v ?? 0)) : 0
  const p50s = m?.latencyMs.p50.filter((v): v is number => v !== null) ?? []
  return (
    <div class="stack">
      <div class="toolbar">
        <h1>Overview</h1>
        <label class="field inline">
          <span>Range</span>
          <select value={rangeId} onChange={(e) => setRangeId(e.currentTarget.value as typeof rangeId)}>
            {RANGES.map((r) => (
              <option value={r.id} key={r.id}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorNote error={byModel.error} />
      {m && requests === 0 ? (
        <NoRequests org={org} />
      ) : (
        m &&
        p && (
          <>
            <div class="tiles">
              <Tile label="Requests" value={fmtInt(requests)} />
              <Tile label="Errors" value={`${fmtInt(errors)} (${requests ? ((100 * errors) / requests).toFixed(1) : 0} %)`} />
              <Tile label="Latency p50 (median of buckets)" value={fmtMs(p50s.length ? p50s.sort((a, b) => a - b)[p50s.length >> 1] : null)} />
              <Tile label="Latency p95 (worst bucket)" value={fmtMs(p95)} />
              <Tile label="Tokens" value={fmtInt(tokens)} />
              <Tile label="Cost" value={fmtUsd(cost)} />
            </div>
            <div class="charts">
              <TimeChart title="Requests by model" times={m.buckets} series={top(m, (s) => s.requests)} />
              <TimeChart title="Errors by model" times={m.buckets} series={top(m, (s) => s.errors)} />
              <TimeChart
                title="Latency (ms)"
                times={m.buckets}
                series={[
                  { label: 'p50', values: m.latencyMs.p50 },
                  { label: 'p95', values: m.latencyMs.p95 },
                ]}
              />
              <TimeChart
                title="Time to first token, streams (ms)"
                times={m.buckets}
                series={[
                  { label: 'p50', values: m.ttftMs.p50 },
                  { label: 'p95', values: m.ttftMs.p95 },
                ]}
              />
              <TimeChart title="Tokens by provider" times={p.buckets} series={top(p, (s) => s.tokens)} />
              <TimeChart title="Cost by model (USD)" times={m.buckets} series={top(m, (s) => s.costUsd)} format={(v) => fmtUsd(v)} />
            </div>
          </>
        )
      )}
      <Section title="Usage">
        <div class="row">
          <label class="field inline">
            <span>Group by</span>
            <select aria-label="Group usage by" value={grouping} onChange={(e) => setGrouping(e.currentTarget.value as Grouping)}>
              {GROUPINGS.map((g) => (
                <option value={g.id} key={g.id}>
                  {g.label}
                </option>
              ))}
            </select>
          </label>
          {grouping === 'metadata' && (
            <form
              class="row"
              onSubmit={(e) => {
                e.preventDefault()
                setMetadataKey(String(new FormData(e.currentTarget).get('metadataKey') ?? '').trim())
              }}
            >
              <input name="metadataKey" aria-label="Metadata key" placeholder="feature" defaultValue={metadataKey} />
              <button type="submit" class="secondary">
                Show
              </button>
            </form>
          )}
        </div>
        <ErrorNote error={usage.error} />
        {grouping === 'metadata' && !metadataKey && <p class="hint">Name a metadata key to group by its values.</p>}
        {usage.data && usage.data.data.length === 0 && <Empty title="No usage in this range." />}
        {usage.data && usage.data.data.length > 0 && (
          <table>
            <thead>
              <tr>
                <th>{grouping === 'metadata' ? metadataKey : groupLabel}</th>
                <th class="num">Requests</th>
                <th class="num">Errors</th>
                <th class="num">Input</th>
                <th class="num">Cached</th>
                <th class="num">Output</th>
                <th class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {usage.data.data.map((r) => (
                <tr key={r.key ?? ''}>
                  <td>{rowLabel(r.key)}</td>
                  <td class="num">{fmtInt(r.requests)}</td>
                  <td class="num">{fmtInt(r.errors)}</td>
                  <td class="num">{fmtInt(r.tokens.input)}</td>
                  <td class="num">{fmtInt(r.tokens.cachedInput)}</td>
                  <td class="num">{fmtInt(r.tokens.output)}</td>
                  <td class="num">{fmtUsd(r.costUsd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Budgets org={org} />
    </div>
  )
}

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div class="tile">
      <span>{label}</span>
      <strong>{value}</strong>
    </div>
  )
}

/** Each budget of the policy with what was spent and what remains in its period (PRODUCT §11). */
function Budgets({ org }: { org: string }) {
  const budgets = useLoad(() => get<{ data: BudgetStatus[] }>(orgPath(org, '/budgets')), [org])
  const list = budgets.data?.data ?? []
  return (
    <Section title="Budgets">
      <ErrorNote error={budgets.error} />
      {budgets.data && list.length === 0 && (
        <Empty title="No budgets.">
          <p>
            Add them to the policy on <a href="#/settings">Policy &amp; access</a>, e.g. 50 USD a month for the org.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <table aria-label="Budgets">
          <thead>
            <tr>
              <th>Scope</th>
              <th>Period</th>
              <th class="num">Budget</th>
              <th class="num">Spent</th>
              <th class="num">Reserved</th>
              <th class="num">Remaining</th>
              <th>Resets</th>
            </tr>
          </thead>
          <tbody>
            {list.map((b) => (
              <tr key={`${b.scope}/${b.subject ?? ''}/${b.period}`}>
                <td>
                  {b.scope}
                  {b.subject ? `: ${b.subject}` : ''}
                </td>
                <td>{b.period}</td>
                <td class="num">{fmtUsd(b.usd)}</td>
                <td class="num">{fmtUsd(b.spentUsd)}</td>
                <td class="num">{fmtUsd(b.reservedUsd)}</td>
                <td class="num">
                  <meter min={0} max={b.usd} low={b.usd * 0.2} optimum={b.usd} value={Math.max(0, b.remainingUsd)} />{' '}
                  {fmtRemaining(b.remainingUsd, b.spentUsd, b.reservedUsd)}
                </td>
                <td>{b.resetsAt ? fmtTime(b.resetsAt) : 'never (total)'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

export function NoRequests({ org }: { org: string }) {
  const curl = `curl ${location.origin}/v1/chat/completions \\
  -H "Authorization: GwKey $GW_KEY" -H "Content-Type: application/json" \\
  -d '{"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}'`
  return (
    <Empty title="No requests yet — here is a curl to make the first one.">
      <p>
        Create a service key for <strong>{org}</strong> on <a href="#/keys">Keys</a>, set it as <code>GW_KEY</code>, then:
      </p>
      <pre class="json">{curl}</pre>
    </Empty>
  )
}
