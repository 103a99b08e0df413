// Access log lines on stdout (GW_LOG_FORMAT): one per API request, JSON or a short human line, never
// bodies, keys or tokens; also the start-up summary in the same format.

import type { LogEntry } from '../domain/log-entry'

export type LogFormat = 'json' | 'pretty' | 'off'

/** The access-log record of one request (PRODUCT §14 names the keys). */
interface AccessRecord {
  time: string
  requestId: string
  orgId: string | null
  endpoint: string
  model: string | null
  status: number
  code: string
  latencyMs: number
  ttftMs: number | null
  usage: { promptTokens: number; completionTokens: number; totalTokens: number; cachedTokens: number } | null
  costUsd: number | null
  fallback: { reason: string | null; model: string | null } | null
}

function accessRecord(e: LogEntry, authenticated: boolean): AccessRecord {
  const u = e.usage
  return {
    time: new Date().toISOString(),
    requestId: e.requestId,
    orgId: authenticated ? e.orgId : null,
    endpoint: e.endpoint,
    model: e.model ?? e.requestedModel,
    status: e.status,
    code: e.errorCode ?? '',
    latencyMs: e.latencyMs,
    ttftMs: e.ttftMs,
    usage: u.totalTokens
      ? { promptTokens: u.promptTokens, completionTokens: u.completionTokens, totalTokens: u.totalTokens, cachedTokens: u.cachedTokens }
      : null,
    costUsd: e.costUsd,
    fallback: e.fallback.used ? { reason: e.fallback.reason, model: e.fallback.model } : null,
  }
}

function prettyLine(r: AccessRecord): string {
  const parts = [r.time.slice(11, 23), String(r.status), r.endpoint]
  // One request, one line: a name the client gave never starts another.
  if (r.model) parts.push(r.model.replace(/[\u0000-\u001f\u007f]/g, '?'))
  parts.push(`${r.latencyMs}ms`)
  if (r.ttftMs !== null) parts.push(`ttft ${r.ttftMs}ms`)
  if (r.usage) parts.push(`${r.usage.promptTokens}→${r.usage.completionTokens} tok`)
  if (r.costUsd !== null) parts.push(`$${r.costUsd}`)
  if (r.code) parts.push(r.code)
  if (r.fallback) parts.push(`fallback ${r.fallback.reason ?? ''}→${r.fallback.model ?? ''}`)
  if (r.orgId) parts.push(`org=${r.orgId}`)
  parts.push(`req=${r.requestId}`)
  return parts.join(' ')
}

/** stdout as a sink that survives a reader going away: EPIPE (an 'error' event) would otherwise end gw. */
function stdoutSink(): (text: string) => void {
  let broken = false
  process.stdout.on('error', () => {
    broken = true
  })
  return (text) => {
    if (!broken) process.stdout.write(text)
  }
}

/** Writes lines to stdout in batches, once per event-loop turn, so a request never waits on the pipe. */
export class LineWriter {
  private lines: string[] = []
  private scheduled = false
  private sink: ((text: string) => void) | undefined

  constructor(sink?: (text: string) => void) {
    this.sink = sink
  }

  write(line: string): void {
    this.lines.push(line)
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.flush())
  }

  flush(): void {
    this.scheduled = false
    if (!this.lines.length) return
    const text = `${this.lines.join('\n')}\n`
    this.lines = []
    this.sink ??= stdoutSink()
    this.sink(text)
  }
}

export class AccessLog {
  constructor(
    readonly format: LogFormat,
    private readonly out = new LineWriter(),
  ) {}

  request(e: LogEntry, authenticated: boolean): void {
    if (this.format === 'off') return
    const r = accessRecord(e, authenticated)
    this.out.write(this.format === 'json' ? JSON.stringify(r) : prettyLine(r))
  }

  flush(): void {
    this.out.flush()
  }
}
