// A small Prometheus registry: counters and histograms with fixed label names, gauges read at scrape
// time, rendered in the Prometheus text format 0.0.4 (docs/observability.md says why not prom-client).

/** Label values in the order of the metric's label names. */
export type LabelValues = readonly string[]

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

function formatValue(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Infinity) return '+Inf'
  if (n === -Infinity) return '-Inf'
  return String(n)
}

function labelText(names: readonly string[], values: LabelValues, extra?: string): string {
  const parts: string[] = []
  for (let i = 0; i < names.length; i++) parts.push(`${names[i]}="${escapeLabel(values[i] ?? '')}"`)
  if (extra) parts.push(extra)
  return parts.length ? `{${parts.join(',')}}` : ''
}

interface Metric {
  render(out: string[]): void
}

/** Series are keyed by their label values joined with a byte no label value carries. */
export const SEP = '\u0001'

/** One series of a counter: a caller that keeps it counts without finding it again (`value += n`). */
export interface CounterSeries {
  readonly labels: LabelValues
  value: number
}

const keyOf = (labels: LabelValues) => (labels.length === 1 ? (labels[0] as string) : labels.join(SEP))

export class Counter implements Metric {
  private readonly all = new Map<string, CounterSeries>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[] = [],
  ) {}

  inc(labels: LabelValues, by = 1): void {
    this.series(labels).value += by
  }

  /** The series of these label values, made (at 0) when new. */
  series(labels: LabelValues): CounterSeries {
    const key = keyOf(labels)
    let s = this.all.get(key)
    if (!s) this.all.set(key, (s = { labels, value: 0 }))
    return s
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} counter`)
    for (const s of this.all.values()) out.push(`${this.name}${labelText(this.labelNames, s.labels)} ${formatValue(s.value)}`)
  }
}

export interface HistogramSeries {
  labels: LabelValues
  /** Per bucket (not cumulative); the last slot is +Inf. */
  counts: Float64Array
  sum: number
  count: number
}

export class Histogram implements Metric {
  private readonly all = new Map<string, HistogramSeries>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    /** Upper bounds, ascending. */
    readonly buckets: readonly number[],
  ) {}

  observe(labels: LabelValues, value: number): void {
    this.record(this.series(labels), value)
  }

  /** The series of these label values, made (empty) when new. */
  series(labels: LabelValues): HistogramSeries {
    const key = keyOf(labels)
    let s = this.all.get(key)
    if (!s) this.all.set(key, (s = { labels, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 }))
    return s
  }

  /** One observation in a series this histogram made. */
  record(s: HistogramSeries, value: number): void {
    const b = this.buckets
    let i = 0
    while (i < b.length && value > (b[i] as number)) i++
    s.counts[i] = (s.counts[i] ?? 0) + 1
    s.sum += value
    s.count++
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`)
    for (const s of this.all.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += s.counts[i] as number
        const le = i < this.buckets.length ? formatValue(this.buckets[i] as number) : '+Inf'
        out.push(`${this.name}_bucket${labelText(this.labelNames, s.labels, `le="${le}"`)} ${cumulative}`)
      }
      const l = labelText(this.labelNames, s.labels)
      out.push(`${this.name}_sum${l} ${formatValue(s.sum)}`, `${this.name}_count${l} ${s.count}`)
    }
  }
}

/** A gauge (or externally kept counter) whose series are read when scraped. */
export class Collected implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'gauge' | 'counter',
    readonly labelNames: readonly string[],
    private readonly read: () => Iterable<[LabelValues, number]>,
  ) {}

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`)
    for (const [labels, value] of this.read()) out.push(`${this.name}${labelText(this.labelNames, labels)} ${formatValue(value)}`)
  }
}

export class MetricRegistry {
  private readonly metrics: Metric[] = []

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames))
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets))
  }

  /** A metric read at scrape time; `read` yields [label values, value] pairs. */
  collected(
    name: string,
    help: string,
    type: 'gauge' | 'counter',
    labelNames: readonly string[],
    read: () => Iterable<[LabelValues, number]>,
  ): void {
    this.add(new Collected(name, help, type, labelNames, read))
  }

  private add<M extends Metric>(m: M): M {
    this.metrics.push(m)
    return m
  }

  /** The exposition, in the Prometheus text format 0.0.4. */
  render(): string {
    const out: string[] = []
    for (const m of this.metrics) m.render(out)
    return `${out.join('\n')}\n`
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
