// Reads gw's configuration from the environment (PRODUCT §2), with CLI flags overriding, and validates it.

import { dirname, join } from 'node:path'
import { secretArg } from './cli/args'
import { MIN_SECRET_CHARS } from './crypto/secret-box'
import { trustedProxyProblem } from './http/client-address'
import type { ErrorShape } from './errors'
import type { LogFormat } from './observability/access-log'
import { upstreamPoolSize } from './policy/stream-slots'
import type { ProviderId } from './providers/provider-id'

export interface Config {
  host: string
  port: number
  /** A listener of its own for /admin, /metrics (and the dashboard): the public one then serves only the client API. */
  adminListener: { host: string; port: number } | undefined
  dbPath: string
  adminToken: string | undefined
  /** Raw GW_SECRET; when unset a secret file beside the database is used. */
  secret: string | undefined
  baseUrls: Record<ProviderId, string>
  upstreamTimeoutMs: number
  /** A stream whose client has taken no data for this long is ended (its upstream released). */
  clientReadTimeoutMs: number
  maxBodyBytes: number
  /** GW_MAX_INFLIGHT_BODY_BYTES: bytes of request bodies all requests in flight may hold together. */
  maxInflightBodyBytes: number
  /** BUN_CONFIG_MAX_HTTP_REQUESTS as Bun read it at start: upstream requests in flight at once (the stream caps derive from it). */
  upstreamPool: number
  /** At SIGTERM/SIGINT, how long in-flight requests may run before open streams are ended. */
  drainMs: number
  /** Least time between two fetches of an OIDC issuer's JWKS caused by an unknown key id. */
  jwksRefreshMs: number
  promptsDir: string
  catalogPath: string | undefined
  /** GW_CONFIG: a YAML file of provider keys and routes applied at start (PRODUCT §13). */
  configFile: string | undefined
  logBodies: boolean
  /** NODE_ENV=development (`npm run dev`): the dashboard is bundled on request, with hot reload. */
  dev: boolean
  /** Raw log entries older than this many days are pruned (0 keeps everything). */
  logRetentionDays: number
  /** Each stored request/response body is capped at this size and then stored as a truncated preview. */
  logBodyMaxBytes: number
  /** Log pages and usage reports (`GET /v1/logs`, `/v1/usage`) each org may read per minute; 0: no limit. */
  logReadsPerMinute: number
  /** Provider keys of the `default` org, from OPENAI_API_KEY etc. */
  envProviderKeys: Partial<Record<ProviderId, string>>
  envServiceKey: string | undefined
  /** GW_DATABASE_URL: PostgreSQL instead of SQLite at dbPath (PRODUCT §10). */
  databaseUrl: string | undefined
  /** GW_REDIS_URL: counters, breaker state and change notices shared by every instance. */
  redisUrl: string | undefined
  /** GW_REDIS_REQUIRED: limited requests get 503 while Redis is unreachable (else local counters). */
  redisRequired: boolean
  /** GW_REDIS_PREFIX: prefix of every Redis key and channel, so several gateways can share one Redis. */
  redisPrefix: string
  /** GW_SPOOL_DIR: where log entries wait while the database is unreachable. */
  spoolDir: string
  /** GW_ERROR_FORMAT: the shape of error bodies unless a request asks otherwise; unset, it follows the client (PRODUCT §4). */
  errorFormat: ErrorShape | undefined
  /** GW_CORS_ORIGINS: origins browsers may call from (`*` for any); empty = no CORS headers. */
  corsOrigins: readonly string[]
  /** GW_TRUSTED_PROXIES: IPs/CIDRs of reverse proxies whose X-Forwarded-For names the client (per-address limits); empty = the socket's peer. */
  trustedProxies: readonly string[]
  /** GET /metrics: admin token (default), open, or off (PRODUCT §14). */
  metrics: 'admin' | 'public' | 'off'
  /** An `org` label on the request, token and cost counters. */
  metricsOrgLabel: boolean
  /** Access log lines on stdout; default `pretty` on a terminal, otherwise `off`. */
  logFormat: LogFormat
  /** Prompt and completion text on spans. */
  traceContent: boolean
  /** OTLP/HTTP trace export, from the standard OTEL_* variables; undefined when no endpoint is set. */
  otel: OtelConfig | undefined
}

export interface OtelConfig {
  /** Full URL the spans are POSTed to (…/v1/traces). */
  tracesUrl: string
  protocol: 'http/protobuf' | 'http/json'
  headers: Record<string, string>
  serviceName: string
  /** Extra resource attributes from OTEL_RESOURCE_ATTRIBUTES. */
  resource: Record<string, string>
  timeoutMs: number
}

export type Env = Record<string, string | undefined>

export const DEFAULT_PROMPTS_DIR = './prompts'
/** An operator-chosen GW_SERVICE_KEY must be at least this long. */
const MIN_SERVICE_KEY_CHARS = 32

/** CLI flag → env variable it overrides. */
const FLAGS: Record<string, string> = {
  host: 'GW_HOST',
  port: 'GW_PORT',
  db: 'GW_DB',
  'admin-token': 'GW_ADMIN_TOKEN',
  'admin-host': 'GW_ADMIN_HOST',
  'admin-port': 'GW_ADMIN_PORT',
  'prompts-dir': 'GW_PROMPTS_DIR',
  catalog: 'GW_CATALOG',
  config: 'GW_CONFIG',
  'upstream-timeout-ms': 'GW_UPSTREAM_TIMEOUT_MS',
  'client-read-timeout-ms': 'GW_CLIENT_READ_TIMEOUT_MS',
  'max-body-bytes': 'GW_MAX_BODY_BYTES',
  'max-inflight-body-bytes': 'GW_MAX_INFLIGHT_BODY_BYTES',
  'drain-ms': 'GW_DRAIN_MS',
  'jwks-refresh-ms': 'GW_JWKS_REFRESH_MS',
  'log-bodies': 'GW_LOG_BODIES',
  'log-retention-days': 'GW_LOG_RETENTION_DAYS',
  'log-body-max-bytes': 'GW_LOG_BODY_MAX_BYTES',
  'log-reads-per-minute': 'GW_LOG_READS_PER_MINUTE',
  'log-format': 'GW_LOG_FORMAT',
  'error-format': 'GW_ERROR_FORMAT',
  'cors-origins': 'GW_CORS_ORIGINS',
  metrics: 'GW_METRICS',
  'metrics-org-label': 'GW_METRICS_ORG_LABEL',
  'trace-content': 'GW_TRACE_CONTENT',
  'openai-base-url': 'GW_OPENAI_BASE_URL',
  'anthropic-base-url': 'GW_ANTHROPIC_BASE_URL',
  'google-base-url': 'GW_GOOGLE_BASE_URL',
  'mistral-base-url': 'GW_MISTRAL_BASE_URL',
  'redis-required': 'GW_REDIS_REQUIRED',
  'redis-prefix': 'GW_REDIS_PREFIX',
  'spool-dir': 'GW_SPOOL_DIR',
  // Not flags: GW_SECRET, GW_SERVICE_KEY and the database and Redis URLs (they may hold passwords)
  // come from the environment only, so they never show in `ps`.
}

/** GW_* variables with no flag (secrets, URLs that may hold passwords, lists); a new one goes here too (test/unit/known-settings.test.ts). */
const ENV_ONLY_SETTINGS = ['GW_SECRET', 'GW_SERVICE_KEY', 'GW_DATABASE_URL', 'GW_REDIS_URL', 'GW_TRUSTED_PROXIES']

/** Every GW_* variable gw reads: the flags' and those set in the environment only. */
export const KNOWN_SETTINGS: ReadonlySet<string> = new Set([...Object.values(FLAGS), ...ENV_ONLY_SETTINGS])

/** Edits (insert, delete, replace a character) turning `a` into `b`. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = row
  }
  return prev[b.length] as number
}

/**
 * One line per GW_* variable gw does not know but that is a few edits from one it does (a typo that
 * would otherwise be ignored in silence), naming that one. Farther names (a client's GW_KEY) are left alone.
 */
export function misspeltSettings(env: Env): string[] {
  const lines: string[] = []
  for (const name of Object.keys(env)) {
    if (!name.startsWith('GW_') || KNOWN_SETTINGS.has(name)) continue
    const [closest, distance] = [...KNOWN_SETTINGS]
      .map((k) => [k, editDistance(name, k)] as const)
      .reduce((best, c) => (c[1] < best[1] ? c : best))
    if (distance <= Math.max(2, Math.floor(name.length / 4)))
      lines.push(`${name.slice(0, 64)} is not a gw setting and is ignored: did you mean ${closest}?`)
  }
  return lines
}

/** Names of the configuration flags (`--port`, `--db`, …), accepted by every command. */
export const CONFIG_FLAGS: ReadonlySet<string> = new Set(Object.keys(FLAGS))

/** `--flag  VARIABLE` lines for the help text. */
export const CONFIG_FLAG_HELP = Object.entries(FLAGS).map(([flag, env]) => `--${flag} ${env === 'GW_ADMIN_TOKEN' ? '-' : 'VALUE'}`.padEnd(32) + `overrides ${env}`)

/** The environment variable holding each provider's key (the `default` org's, and `gw provider set`'s). */
export const PROVIDER_KEY_VARIABLES: Record<ProviderId, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GEMINI_API_KEY',
  mistral: 'MISTRAL_API_KEY',
}

/** Flags whose values are secrets: read from stdin (`--admin-token -`), never taken from argv. */
const SECRET_FLAGS = new Set(['GW_ADMIN_TOKEN'])

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Splits `--name value` / `--name=value` flags known to FLAGS out of argv; returns env overrides and the rest. */
export function parseFlags(argv: readonly string[]): { overrides: Env; rest: string[] } {
  const overrides: Env = {}
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
    const envName = m ? FLAGS[m[1] as string] : undefined
    if (!m || !envName) {
      rest.push(arg)
      continue
    }
    const value = m[2] ?? argv[++i]
    if (value === undefined) throw new ConfigError(`flag --${m[1]} needs a value`)
    try {
      overrides[envName] = SECRET_FLAGS.has(envName) ? secretArg(m[1] as string, value, `set ${envName}`) : value
    } catch (err) {
      throw new ConfigError((err as Error).message)
    }
  }
  return { overrides, rest }
}

/**
 * `secretOptional`: a command that never seals or opens a provider key (`gw migrate` without
 * `--from`) runs on PostgreSQL without GW_SECRET.
 */
export function loadConfig(env: Env, opts: { secretOptional?: boolean } = {}): Config {
  const problems: string[] = []
  const str = (name: string, dflt: string) => {
    const v = env[name]
    return v === undefined || v === '' ? dflt : v
  }
  const opt = (name: string) => {
    const v = env[name]
    return v === undefined || v === '' ? undefined : v
  }
  const num = (name: string, dflt: number, min: number, max: number, whole = false) => {
    const raw = opt(name)
    if (raw === undefined) return dflt
    const n = Number(raw)
    if (!(whole ? Number.isInteger(n) : Number.isFinite(n)) || n < min || n > max) {
      problems.push(`${name} must be ${whole ? 'an integer' : 'a number'} from ${min} to ${max}, got "${raw}"`)
      return dflt
    }
    return n
  }
  const int = (name: string, dflt: number, min: number, max: number) => num(name, dflt, min, max, true)
  const bool = (name: string, dflt: boolean) => {
    const raw = opt(name)
    if (raw === undefined) return dflt
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    problems.push(`${name} must be true or false, got "${raw}"`)
    return dflt
  }
  const url = (name: string, dflt: string) => {
    const v = str(name, dflt).replace(/\/+$/, '')
    if (!/^https?:\/\/[^/]/.test(v)) problems.push(`${name} must be an http(s) URL, got "${v}"`)
    return v
  }

  const envProviderKeys: Partial<Record<ProviderId, string>> = {}
  for (const [p, name] of Object.entries(PROVIDER_KEY_VARIABLES) as [ProviderId, string][]) {
    const v = opt(name)
    if (v) envProviderKeys[p] = v
  }

  const oneOf = <T extends string>(name: string, values: readonly T[], dflt: T): T => {
    const raw = opt(name)?.toLowerCase()
    if (raw === undefined) return dflt
    if ((values as readonly string[]).includes(raw)) return raw as T
    problems.push(`${name} must be one of ${values.join(', ')}, got "${raw}"`)
    return dflt
  }

  const adminToken = opt('GW_ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16)
    problems.push('GW_ADMIN_TOKEN must be at least 16 characters')

  const dbPath = str('GW_DB', './data/gw.db')
  const databaseUrl = opt('GW_DATABASE_URL')
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\/./.test(databaseUrl))
    problems.push('GW_DATABASE_URL must be a postgres:// (or postgresql://) URL')
  if (databaseUrl !== undefined && !opt('GW_SECRET') && !opts.secretOptional)
    problems.push('GW_SECRET must be set with GW_DATABASE_URL: every instance must seal and open provider keys with the same secret')
  const redisUrl = opt('GW_REDIS_URL')
  if (redisUrl !== undefined && !/^rediss?:\/\/./.test(redisUrl)) problems.push('GW_REDIS_URL must be a redis:// (or rediss://) URL')
  const envServiceKey = opt('GW_SERVICE_KEY')
  if (envServiceKey !== undefined && envServiceKey.length < MIN_SERVICE_KEY_CHARS)
    problems.push(`GW_SERVICE_KEY must be at least ${MIN_SERVICE_KEY_CHARS} characters (gw's own keys have 50)`)
  // The prefix is how gw tells its keys from OIDC tokens when a client (every OpenAI SDK) sends Bearer.
  if (envServiceKey !== undefined && !envServiceKey.startsWith('gw_sk_'))
    problems.push('GW_SERVICE_KEY must start with "gw_sk_" (how gw tells its keys from OIDC tokens sent as Bearer)')
  if (opt('GW_ADMIN_HOST') !== undefined && opt('GW_ADMIN_PORT') === undefined)
    problems.push('GW_ADMIN_HOST needs GW_ADMIN_PORT (the admin listener is separate only when it has a port)')
  const secret = opt('GW_SECRET')
  if (secret !== undefined && secret.length < MIN_SECRET_CHARS)
    problems.push(`GW_SECRET must be at least ${MIN_SECRET_CHARS} characters (it derives the key that encrypts provider keys)`)

  const trustedProxies = (opt('GW_TRUSTED_PROXIES') ?? '').split(',').map((e) => e.trim()).filter(Boolean)
  for (const e of trustedProxies) {
    const problem = trustedProxyProblem(e)
    if (problem) problems.push(problem)
  }

  const maxBodyBytes = int('GW_MAX_BODY_BYTES', 10_485_760, 1024, 1_073_741_824)
  const config: Config = {
    host: str('GW_HOST', '127.0.0.1'),
    port: int('GW_PORT', 8787, 0, 65535),
    adminListener:
      opt('GW_ADMIN_PORT') === undefined
        ? undefined
        : { host: str('GW_ADMIN_HOST', '127.0.0.1'), port: int('GW_ADMIN_PORT', 0, 0, 65535) },
    dbPath,
    adminToken,
    secret,
    baseUrls: {
      openai: url('GW_OPENAI_BASE_URL', 'https://api.openai.com/v1'),
      anthropic: url('GW_ANTHROPIC_BASE_URL', 'https://api.anthropic.com/v1'),
      google: url('GW_GOOGLE_BASE_URL', 'https://generativelanguage.googleapis.com/v1beta'),
      mistral: url('GW_MISTRAL_BASE_URL', 'https://api.mistral.ai/v1'),
    },
    upstreamTimeoutMs: int('GW_UPSTREAM_TIMEOUT_MS', 60_000, 1, 3_600_000),
    clientReadTimeoutMs: int('GW_CLIENT_READ_TIMEOUT_MS', 30_000, 100, 3_600_000),
    maxBodyBytes,
    // 256 MiB, or one body of the largest size when GW_MAX_BODY_BYTES is set higher.
    maxInflightBodyBytes: int('GW_MAX_INFLIGHT_BODY_BYTES', Math.max(268_435_456, maxBodyBytes), 1024, 68_719_476_736),
    upstreamPool: upstreamPoolSize(env.BUN_CONFIG_MAX_HTTP_REQUESTS),
    drainMs: int('GW_DRAIN_MS', 10_000, 0, 600_000),
    jwksRefreshMs: int('GW_JWKS_REFRESH_MS', 30_000, 0, 3_600_000),
    promptsDir: str('GW_PROMPTS_DIR', DEFAULT_PROMPTS_DIR),
    catalogPath: opt('GW_CATALOG'),
    configFile: opt('GW_CONFIG'),
    logBodies: bool('GW_LOG_BODIES', true),
    dev: env.NODE_ENV === 'development',
    logRetentionDays: num('GW_LOG_RETENTION_DAYS', 30, 0, 36_500),
    logBodyMaxBytes: int('GW_LOG_BODY_MAX_BYTES', 65_536, 256, 1_073_741_824),
    logReadsPerMinute: int('GW_LOG_READS_PER_MINUTE', 120, 0, 1_000_000),
    envProviderKeys,
    envServiceKey,
    databaseUrl,
    redisUrl,
    redisRequired: bool('GW_REDIS_REQUIRED', false),
    redisPrefix: str('GW_REDIS_PREFIX', 'gw:'),
    spoolDir: str('GW_SPOOL_DIR', join(dbPath === ':memory:' ? './data' : dirname(dbPath), 'spool')),
    errorFormat: opt('GW_ERROR_FORMAT') === undefined ? undefined : oneOf('GW_ERROR_FORMAT', ['gw', 'openai'] as const, 'gw'),
    corsOrigins: (opt('GW_CORS_ORIGINS') ?? '')
      .split(',')
      .map((o) => o.trim().replace(/\/+$/, ''))
      .filter(Boolean),
    trustedProxies,
    metrics: oneOf('GW_METRICS', ['admin', 'public', 'off'], 'admin'),
    metricsOrgLabel: bool('GW_METRICS_ORG_LABEL', false),
    logFormat: oneOf('GW_LOG_FORMAT', ['json', 'pretty', 'off'], process.stdout.isTTY ? 'pretty' : 'off'),
    traceContent: bool('GW_TRACE_CONTENT', false),
    otel: otelConfig(env, problems),
  }
  if (config.maxInflightBodyBytes < config.maxBodyBytes)
    problems.push(`GW_MAX_INFLIGHT_BODY_BYTES (${config.maxInflightBodyBytes}) must be at least GW_MAX_BODY_BYTES (${config.maxBodyBytes}), or no body of the largest size is ever taken`)
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
  return Object.freeze(config)
}

/** Parses `k=v,k2=v2` (values percent-decoded), as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES are written. */
function keyValueList(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of (raw ?? '').split(',')) {
    const eq = pair.indexOf('=')
    if (eq < 1) continue
    const k = pair.slice(0, eq).trim()
    let v = pair.slice(eq + 1).trim()
    try {
      v = decodeURIComponent(v)
    } catch {}
    out[k] = v
  }
  return out
}

/** The OTLP trace exporter's settings from the standard OTEL_* variables (traces-specific ones win). */
function otelConfig(env: Env, problems: string[]): OtelConfig | undefined {
  const get = (name: string) => (env[name] === '' ? undefined : env[name])
  if (get('OTEL_SDK_DISABLED') === 'true' || get('OTEL_TRACES_EXPORTER') === 'none') return undefined
  const specific = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = get('OTEL_EXPORTER_OTLP_ENDPOINT')
  if (!specific && !base) return undefined
  const tracesUrl = specific ?? `${base?.replace(/\/+$/, '')}/v1/traces`
  if (!/^https?:\/\/[^/]/.test(tracesUrl)) problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "${tracesUrl}"`)
  const protocol = get('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? get('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    problems.push(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (gw exports over HTTP), got "${protocol}"`)
  const resource = keyValueList(get('OTEL_RESOURCE_ATTRIBUTES'))
  const timeout = Number(get('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') ?? get('OTEL_EXPORTER_OTLP_TIMEOUT') ?? 10_000)
  return {
    tracesUrl,
    protocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf',
    headers: { ...keyValueList(get('OTEL_EXPORTER_OTLP_HEADERS')), ...keyValueList(get('OTEL_EXPORTER_OTLP_TRACES_HEADERS')) },
    serviceName: get('OTEL_SERVICE_NAME') ?? resource['service.name'] ?? 'gw',
    resource,
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 10_000,
  }
}
