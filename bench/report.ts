// Turns the results of `bun run bench` into markdown tables with the issue's targets marked met or
// missed (bench/results/latest.md, or quick.md), so one run's figures can be read and compared.

type P = { p50: number; p99: number }
type Rate = P & { errors: number; achieved: number }
type Max = { rps: number; requests: number; non2xx: number; cpuUsPerRequest: number; cpuBusy: number; otherLoad?: number; threadsUsPerRequest?: ThreadCpu }
/** µs of CPU per request by thread (bench/thread-cpu.ts). */
type ThreadCpu = { serving: number; workers: number; jit: number; other: number }

export interface Results {
  quick: boolean
  date: string
  machine: { cpu?: string; cores: number; memGb: number; bun: string; wrk: string; kernel?: string }
  unloaded: Record<
    string,
    {
      directMs: P
      floorAddedMs: P
      gwAddedMs: P
      /** bench/same-work-floor.ts: gw's required work in a bare handler (chat-completions scenarios). */
      sameWorkAddedMs?: P
      firstChunkDirectMs?: P
      firstChunkFloorAddedMs?: number
      firstChunkGwAddedMs?: number
      firstChunkSameWorkAddedMs?: number
      /** CPU per request of each server during these sequential runs (µs). */
      cpuUsPerRequest?: { floor: number; gw: number; same?: number }
      /** The part of it spent by the JIT's compiler threads (µs): near 0 once the JIT has settled. */
      jitUsPerRequest?: { floor: number; gw: number; same?: number }
      /** gw's CPU per request by thread. */
      gwThreadsUsPerRequest?: ThreadCpu
    }
  >
  fixedRate: Record<string, Record<string, Rate>>
  maxThroughput?: Record<string, Max>
  rssOverRequests: { requests: number; non200: number; warmMb: number; afterMb: number; everyTenThousandMb: number[] }
  streams: { concurrent: number; allOpenAfterMs: number; ok: number; idleRssMb: number; peakRssMb: number; peakSampledMb: number }
  /** Two cores (the writer and its WAL checkpointer at once); `logWriterOneCore`: both on one. */
  logWriterEntriesPerSecond: number
  logWriterOneCore?: number
  /** Through the log path (the log thread), and the serving thread's CPU per entry handed over; `oneCore`: every thread on one. */
  logPath?: { entriesPerSecond: number; servingUsPerEntry: number; oneCore?: { entriesPerSecond: number; servingUsPerEntry: number } }
  logQueries: { rows: number; getByIdMs: P; twoKeyFilterMs: P & { avgRows: number }; twoKeyFilterNoMatchMs: P }
  binary: { mb: number; execToHealthMs: P }
  /** µs of CPU per request: metrics alone, with the JSON access log, with traces. */
  observability?: { metrics: number; metricsAndJsonAccessLog: number; metricsAndTraces: number }
}

const ms = (n: number) => n.toFixed(n < 10 ? 3 : 1)
const pair = (p: P) => `${ms(p.p50)} / ${ms(p.p99)}`
/** µs per request of the floor, the same-work floor and gw: `68 µs · 125 µs · 184 µs`. */
const perServer = (x?: { floor: number; gw: number; same?: number }) => (x ? [x.floor, x.same ?? '–', x.gw].map((n) => (typeof n === 'number' ? `${n} µs` : n)).join(' · ') : '')
/** `52 · 31 · 3 · 4 µs`: serving thread, workers, JIT, other threads. */
const threadCells = (t?: ThreadCpu) => (t ? `${t.serving} · ${t.workers} · ${t.jit} · ${t.other} µs` : '')
const verdict = (ok: boolean) => (ok ? 'met' : '**missed**')
/** Met or missed, with the margin: `value` against `limit`, where lower is better unless `atLeast`. */
function judged(value: number, limit: number, unit: string, atLeast = false): string {
  const ok = atLeast ? value >= limit : value <= limit
  const margin = Math.abs(value - limit)
  const shown = unit === 'ms' ? ms(margin) : Math.round(margin).toLocaleString('en')
  return `${verdict(ok)} by ${shown}${unit === '%' ? ' points' : ` ${unit}`}`
}
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`
/** `a` as a multiple of `b`: `2.12×`. */
const times = (a: number, b: number) => `${(a / b).toFixed(2)}×`

/** RSS is flat when the last half of the samples peaks no more than 10 % above the first half. */
export function rssFlat(samples: number[]): boolean {
  const half = Math.floor(samples.length / 2)
  if (half === 0) return true
  return Math.max(...samples.slice(half)) <= Math.max(...samples.slice(0, half)) * 1.1
}

/** gw's share of the floor's req/s for each scenario both were driven with. */
type Shares = { scenario: string; gw: Max; floor: Max; same: Max | undefined; jsFloor: Max | undefined }
/** Each gw run beside its scenario's floors (a two-core run beside the floor's one-core run: the floors take one core). */
export function throughputShares(max: Record<string, Max>): (Shares & { share: number })[] {
  return Object.keys(max)
    .filter((k) => k.startsWith('gw '))
    .map((k) => {
      const base = k.slice(3).replace(', two cores', '')
      return { scenario: k.slice(3), gw: max[k], floor: max[`floor ${base}`], same: max[`same-work ${base}`], jsFloor: max[`js-stream floor ${base}`] }
    })
    .filter((x): x is Shares => !!x.gw && !!x.floor)
    .map((x) => ({ ...x, share: x.gw.rps / x.floor.rps }))
}

export function markdown(r: Results): string {
  const out: string[] = []
  const m = r.machine
  out.push(`# gw benchmark ${r.quick ? '(quick mode)' : ''}`.trim(), '')
  out.push(`${r.date} · ${m.cores} × ${m.cpu ?? 'CPU'}, ${m.memGb} GiB${m.kernel ? `, Linux ${m.kernel}` : ''} · Bun ${m.bun} · ${m.wrk.split(' Copyright')[0]}`, '')

  out.push('## Unloaded latency, added over direct (ms, p50 / p99)', '')
  const opt = (n: number | undefined) => (n === undefined ? '' : ms(n))
  out.push(
    row([
      'scenario',
      'direct',
      'floor added',
      'same-work floor added',
      'gw added',
      'first chunk: floor added',
      'first chunk: same-work added',
      'first chunk: gw added',
      'CPU/request: floor · same-work · gw',
      'of it JIT compiling',
      'gw: serving thread · workers · JIT · other threads',
    ]),
    row(Array(11).fill('---')),
  )
  for (const [s, u] of Object.entries(r.unloaded))
    out.push(
      row([
        s,
        pair(u.directMs),
        pair(u.floorAddedMs),
        u.sameWorkAddedMs ? pair(u.sameWorkAddedMs) : '',
        `**${pair(u.gwAddedMs)}**`,
        opt(u.firstChunkFloorAddedMs),
        opt(u.firstChunkSameWorkAddedMs),
        u.firstChunkGwAddedMs === undefined ? '' : `**${ms(u.firstChunkGwAddedMs)}**`,
        perServer(u.cpuUsPerRequest),
        perServer(u.jitUsPerRequest),
        threadCells(u.gwThreadsUsPerRequest),
      ]),
    )

  out.push('', '## Fixed rates, open loop, total latency (ms, p50 / p99)', '')
  const series = [...new Set(Object.values(r.fixedRate).flatMap((x) => Object.keys(x)))]
  out.push(row(['rate', ...series]), row(Array(series.length + 1).fill('---')))
  for (const [rate, x] of Object.entries(r.fixedRate))
    out.push(row([`${rate}/s`, ...series.map((k) => (x[k] ? `${pair(x[k])}${x[k].errors ? ` (${x[k].errors} errors)` : ''}` : ''))]))

  if (r.maxThroughput) {
    out.push('', '## Maximum throughput, wrk, 64 connections', '')
    out.push(
      row(['target', 'req/s', 'CPU per request', 'gw: serving thread · workers · JIT · other threads', 'CPU busy (of one core)', 'other programs (of one core)', 'non-2xx']),
      row(Array(7).fill('---')),
    )
    for (const [k, x] of Object.entries(r.maxThroughput))
      out.push(
        row([
          k,
          Math.round(x.rps).toLocaleString('en'),
          `${x.cpuUsPerRequest} µs`,
          threadCells(x.threadsUsPerRequest),
          `${Math.round(x.cpuBusy * 100)} %`,
          x.otherLoad === undefined ? '' : `${Math.round(x.otherLoad * 100)} %`,
          x.non2xx,
        ]),
      )
  }

  const rss = r.rssOverRequests
  out.push('', '## Memory', '')
  out.push(row(['measure', 'result']), row(['---', '---']))
  out.push(row([`RSS after warm-up, then every 10k of ${rss.requests.toLocaleString('en')} requests`, `${rss.warmMb} MB, then ${rss.everyTenThousandMb.join(', ')} MB (${rss.non200} non-200)`]))
  const st = r.streams
  out.push(row([`${st.concurrent} concurrent slow streams`, `all open after ${st.allOpenAfterMs} ms, ${st.ok} completed; idle ${st.idleRssMb} MB, peak ${st.peakRssMb} MB`]))

  const lq = r.logQueries
  out.push('', '## Log store', '')
  out.push(row(['measure', 'result']), row(['---', '---']))
  const oneCore = (n: number | undefined) => (n === undefined ? '' : `; one core ${n.toLocaleString('en')}`)
  out.push(row(['writer (LogWriter + SQLite), sustained, two cores', `${r.logWriterEntriesPerSecond.toLocaleString('en')} entries/s${oneCore(r.logWriterOneCore)}`]))
  if (r.logPath)
    out.push(
      row([
        'log path (handed to the log thread, built and written there), sustained, two cores',
        `${r.logPath.entriesPerSecond.toLocaleString('en')} entries/s; ${r.logPath.servingUsPerEntry} µs of the serving thread per entry` +
          (r.logPath.oneCore ? `; one core ${r.logPath.oneCore.entriesPerSecond.toLocaleString('en')} (${r.logPath.oneCore.servingUsPerEntry} µs)` : ''),
      ]),
    )
  out.push(row([`GET /v1/logs/:id, ${lq.rows.toLocaleString('en')} entries (ms, p50 / p99)`, pair(lq.getByIdMs)]))
  out.push(row([`two-key metadata filter, ${lq.twoKeyFilterMs.avgRows} rows a page`, pair(lq.twoKeyFilterMs)]))
  out.push(row(['two-key filter matching nothing', pair(lq.twoKeyFilterNoMatchMs)]))

  const ob = r.observability
  if (ob) {
    out.push('', '## Observer, CPU per request (µs; an 8-shape mix of finished requests)', '')
    out.push(row(['metrics', 'metrics + JSON access log', 'metrics + traces (incl. encoding)']), row(['---', '---', '---']))
    out.push(row([ob.metrics, ob.metricsAndJsonAccessLog, ob.metricsAndTraces]))
  }

  const shares = r.maxThroughput ? throughputShares(r.maxThroughput) : []
  if (shares.some((x) => x.same)) {
    out.push('', '## gw against the same-work floor (bench/same-work-floor.ts: gw\'s required work, no framework)', '')
    out.push(
      row(['scenario', 'floor CPU/req', 'same-work CPU/req (× floor)', 'gw CPU/req (× same-work)', 'serving thread: same-work · gw (×)', 'same-work req/s (% of floor)', 'gw req/s (% of same-work)']),
      row(Array(7).fill('---')),
    )
    for (const x of shares.filter((y) => y.same)) {
      const sw = x.same as Max
      const share = (a: number, b: number) => `${Math.round((a / b) * 100)} %`
      const swServing = sw.threadsUsPerRequest?.serving
      const gwServing = x.gw.threadsUsPerRequest?.serving
      out.push(
        row([
          x.scenario,
          `${x.floor.cpuUsPerRequest} µs`,
          `${sw.cpuUsPerRequest} µs (${times(sw.cpuUsPerRequest, x.floor.cpuUsPerRequest)})`,
          `${x.gw.cpuUsPerRequest} µs (${times(x.gw.cpuUsPerRequest, sw.cpuUsPerRequest)})`,
          swServing === undefined || gwServing === undefined ? '' : `${swServing} µs · ${gwServing} µs (${times(gwServing, swServing)})`,
          `${Math.round(sw.rps).toLocaleString('en')} (${share(sw.rps, x.floor.rps)})`,
          `${Math.round(x.gw.rps).toLocaleString('en')} (${share(x.gw.rps, sw.rps)})`,
        ]),
      )
    }
  }

  const jsRead = shares.filter((x) => x.jsFloor)
  if (jsRead.length) {
    out.push('', "## Streams read in JavaScript (bench/floor-proxy.ts with FLOOR_READ=js: each chunk read, decoded, encoded and written again)", '')
    out.push(row(['scenario', 'floor CPU/req (native pipe)', 'JavaScript-stream floor CPU/req (× floor)', "gw's serving thread CPU/req (× JavaScript-stream floor)"]), row(Array(4).fill('---')))
    for (const x of jsRead) {
      const js = x.jsFloor as Max
      const serving = x.gw.threadsUsPerRequest?.serving
      out.push(row([x.scenario, `${x.floor.cpuUsPerRequest} µs`, `${js.cpuUsPerRequest} µs (${times(js.cpuUsPerRequest, x.floor.cpuUsPerRequest)})`, serving === undefined ? '' : `${serving} µs (${times(serving, js.cpuUsPerRequest)})`]))
    }
  }

  out.push('', '## The binary', '', `${r.binary.mb} MB; exec to first 200 on /health: ${pair(r.binary.execToHealthMs)} ms (p50 / p99).`)

  out.push('', '## Targets', '', row(['target', 'result', '']), row(['---', '---', '---']))
  for (const s of shares) {
    const pct = Math.round(s.share * 100)
    out.push(row([`gw ≥ half the floor's req/s (${s.scenario})`, `${pct} %`, judged(pct, 50, '%', true)]))
    const limit = 2 * s.floor.cpuUsPerRequest
    out.push(row([`CPU per request ≤ 2× the floor's (${s.scenario})`, `${s.gw.cpuUsPerRequest} µs (floor ${s.floor.cpuUsPerRequest} µs)`, judged(s.gw.cpuUsPerRequest, limit, 'µs')]))
    const serving = s.gw.threadsUsPerRequest?.serving
    if (serving !== undefined) out.push(row([`serving-thread CPU per request ≤ 2× the floor's (${s.scenario})`, `${serving} µs (floor ${s.floor.cpuUsPerRequest} µs)`, judged(serving, limit, 'µs')]))
  }
  for (const kind of ['json', 'stream']) {
    const relay = r.maxThroughput?.[`gw messages passthrough ${kind}`]
    const chat = r.maxThroughput?.[`gw openai ${kind}`]
    if (relay && chat)
      out.push(row([`/v1/messages to Anthropic: CPU per request ≤ chat completions to OpenAI (${kind})`, `${relay.cpuUsPerRequest} µs vs ${chat.cpuUsPerRequest} µs`, judged(relay.cpuUsPerRequest, chat.cpuUsPerRequest, 'µs')]))
  }
  for (const [s, u] of Object.entries(r.unloaded)) {
    out.push(row([`unloaded added p50 ≤ 0.25 ms (${s})`, ms(u.gwAddedMs.p50), judged(u.gwAddedMs.p50, 0.25, 'ms')]))
    out.push(row([`unloaded added p99 ≤ 1 ms (${s})`, ms(u.gwAddedMs.p99), judged(u.gwAddedMs.p99, 1, 'ms')]))
    if (u.firstChunkGwAddedMs !== undefined)
      out.push(row([`added time to first chunk ≤ 0.3 ms (${s})`, ms(u.firstChunkGwAddedMs), judged(u.firstChunkGwAddedMs, 0.3, 'ms')]))
  }
  out.push(row([`peak RSS ≤ 150 MB at ${st.concurrent} streams`, `${st.peakRssMb} MB`, st.ok === st.concurrent ? judged(st.peakRssMb, 150, 'MB') : verdict(false)]))
  out.push(row([`RSS flat over ${rss.requests.toLocaleString('en')} requests`, `${rss.warmMb} → ${rss.afterMb} MB`, verdict(rssFlat(rss.everyTenThousandMb))]))
  out.push(row(['log writer ≥ 20,000 entries/s', r.logWriterEntriesPerSecond.toLocaleString('en'), judged(r.logWriterEntriesPerSecond, 20_000, 'entries/s', true)]))
  out.push(row(['log by id < 20 ms p99', ms(lq.getByIdMs.p99), judged(lq.getByIdMs.p99, 20, 'ms')]))
  if (ob) out.push(row(['metrics ≤ 3 µs CPU per request', `${ob.metrics} µs`, verdict(ob.metrics <= 3)]))
  out.push(row(['two-key metadata filter < 20 ms p99', ms(lq.twoKeyFilterMs.p99), judged(lq.twoKeyFilterMs.p99, 20, 'ms')]))
  return `${out.join('\n')}\n`
}
