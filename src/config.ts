// Reads gw's configuration from the environment (PRODUCT §2), with CLI flags overriding, and validates it.

import type { ProviderId } from './providers/provider-id'

export interface Config {
  host: string
  port: number
  dbPath: string
  adminToken: string | undefined
  /** Raw GW_SECRET; when unset a secret file beside the database is used. */
  secret: string | undefined
  baseUrls: Record<ProviderId, string>
  upstreamTimeoutMs: number
  maxBodyBytes: number
  /** At SIGTERM/SIGINT, how long in-flight requests may run before open streams are ended. */
  drainMs: number
  /** Least time between two fetches of an OIDC issuer's JWKS caused by an unknown key id. */
  jwksRefreshMs: number
  promptsDir: string
  catalogPath: string | undefined
  logBodies: boolean
  /** Raw log entries older than this many days are pruned (0 keeps everything). */
  logRetentionDays: number
  /** Each stored request/response body is capped at this size and then stored as a truncated preview. */
  logBodyMaxBytes: number
  /** Provider keys of the `default` org, from OPENAI_API_KEY etc. */
  envProviderKeys: Partial<Record<ProviderId, string>>
  envServiceKey: string | undefined
}

export type Env = Record<string, string | undefined>

export const DEFAULT_PROMPTS_DIR = './prompts'

/** CLI flag → env variable it overrides. */
const FLAGS: Record<string, string> = {
  host: 'GW_HOST',
  port: 'GW_PORT',
  db: 'GW_DB',
  'admin-token': 'GW_ADMIN_TOKEN',
  'prompts-dir': 'GW_PROMPTS_DIR',
  catalog: 'GW_CATALOG',
  'upstream-timeout-ms': 'GW_UPSTREAM_TIMEOUT_MS',
  'max-body-bytes': 'GW_MAX_BODY_BYTES',
  'drain-ms': 'GW_DRAIN_MS',
  'jwks-refresh-ms': 'GW_JWKS_REFRESH_MS',
  'log-bodies': 'GW_LOG_BODIES',
  'log-retention-days': 'GW_LOG_RETENTION_DAYS',
  'log-body-max-bytes': 'GW_LOG_BODY_MAX_BYTES',
}

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
    overrides[envName] = value
  }
  return { overrides, rest }
}

export function loadConfig(env: Env): Config {
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
  const keyVars: [ProviderId, string][] = [
    ['openai', 'OPENAI_API_KEY'],
    ['anthropic', 'ANTHROPIC_API_KEY'],
    ['google', 'GEMINI_API_KEY'],
    ['mistral', 'MISTRAL_API_KEY'],
  ]
  for (const [p, name] of keyVars) {
    const v = opt(name)
    if (v) envProviderKeys[p] = v
  }

  const adminToken = opt('GW_ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16)
    problems.push('GW_ADMIN_TOKEN must be at least 16 characters')

  const config: Config = {
    host: str('GW_HOST', '127.0.0.1'),
    port: int('GW_PORT', 8787, 0, 65535),
    dbPath: str('GW_DB', './data/gw.db'),
    adminToken,
    secret: opt('GW_SECRET'),
    baseUrls: {
      openai: url('GW_OPENAI_BASE_URL', 'https://api.openai.com/v1'),
      anthropic: url('GW_ANTHROPIC_BASE_URL', 'https://api.anthropic.com/v1'),
      google: url('GW_GOOGLE_BASE_URL', 'https://generativelanguage.googleapis.com/v1beta'),
      mistral: url('GW_MISTRAL_BASE_URL', 'https://api.mistral.ai/v1'),
    },
    upstreamTimeoutMs: int('GW_UPSTREAM_TIMEOUT_MS', 60_000, 1, 3_600_000),
    maxBodyBytes: int('GW_MAX_BODY_BYTES', 10_485_760, 1024, 1_073_741_824),
    drainMs: int('GW_DRAIN_MS', 10_000, 0, 600_000),
    jwksRefreshMs: int('GW_JWKS_REFRESH_MS', 30_000, 0, 3_600_000),
    promptsDir: str('GW_PROMPTS_DIR', DEFAULT_PROMPTS_DIR),
    catalogPath: opt('GW_CATALOG'),
    logBodies: bool('GW_LOG_BODIES', true),
    logRetentionDays: num('GW_LOG_RETENTION_DAYS', 30, 0, 36_500),
    logBodyMaxBytes: int('GW_LOG_BODY_MAX_BYTES', 65_536, 256, 1_073_741_824),
    envProviderKeys,
    envServiceKey: opt('GW_SERVICE_KEY'),
  }
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
  return Object.freeze(config)
}
