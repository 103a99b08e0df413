// Reads a Prometheus exposition with an independent parser (parse-prometheus-text-format) into lookups by series.
// That parser folds labelled histograms into one unlabelled series, so histograms are read from their
// `_bucket`, `_sum` and `_count` samples, parsed as untyped families with their labels.

import parse from 'parse-prometheus-text-format'

interface Family {
  name: string
  type: string
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }[]
}

export interface Exposition {
  families: Map<string, Family>
  /** The value of the series whose labels include `labels` (exactly one must match; 0 when none). */
  value(name: string, labels?: Record<string, string>): number
  /** A histogram series: count, sum and cumulative buckets by `le`. */
  histogram(name: string, labels?: Record<string, string>): { count: number; sum: number; buckets: Map<string, number> } | undefined
  /** Number of series of a metric. */
  series(name: string): number
}

const matches = (have: Record<string, string> | undefined, want: Record<string, string>) =>
  Object.entries(want).every(([k, v]) => (have?.[k] ?? '') === v)

export function readExposition(text: string): Exposition {
  const histograms = [...text.matchAll(/^# TYPE (\S+) histogram$/gm)].map((m) => m[1] as string)
  const families = new Map<string, Family>()
  // Histogram samples come series by series, so their `_bucket`/`_sum`/`_count` families recur: merge them.
  for (const f of parse(text.replace(/^# TYPE \S+ histogram$/gm, '')) as Family[]) {
    const seen = families.get(f.name)
    if (seen) seen.metrics.push(...f.metrics)
    else families.set(f.name, f)
  }
  for (const h of histograms) {
    const f = families.get(h)
    families.set(h, { name: h, type: 'HISTOGRAM', metrics: families.get(`${h}_count`)?.metrics ?? f?.metrics ?? [] })
  }
  const find = (name: string, labels: Record<string, string>) => {
    const f = families.get(name)
    if (!f) return undefined
    const hits = f.metrics.filter((m) => matches(m.labels, labels))
    if (hits.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${hits.length} series`)
    return hits[0]
  }
  return {
    families,
    value: (name, labels = {}) => Number(find(name, labels)?.value ?? 0),
    histogram(name, labels = {}) {
      const count = find(`${name}_count`, labels)
      if (!count) return undefined
      const buckets = (families.get(`${name}_bucket`)?.metrics ?? [])
        .filter((m) => matches(m.labels, labels))
        .map((m): [string, number] => [m.labels?.le as string, Number(m.value)])
      return { count: Number(count.value), sum: Number(find(`${name}_sum`, labels)?.value), buckets: new Map(buckets) }
    },
    series: (name) => families.get(name)?.metrics.length ?? 0,
  }
}
