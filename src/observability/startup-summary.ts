// What `gw serve` prints once it listens: address, store, providers, metrics and tracing, in the access
// log's format (one JSON line with GW_LOG_FORMAT=json, short lines otherwise).

import { resolve } from 'node:path'
import { type Config, PROVIDER_KEY_VARIABLES } from '../config'
import { PROVIDER_IDS } from '../providers/provider-id'
import { databaseTarget } from '../store/postgres/open'
import { GW_COMMAND } from '../cli/args'

export interface StartupFacts {
  url: string
  /** The admin listener, when GW_ADMIN_PORT gives it one. */
  adminUrl?: string
  /** Providers the `default` org has a key for (native ids, then OpenAI-compatible names). */
  providers: string[]
}

export interface StartupSummary {
  time: string
  msg: 'gw started'
  address: string
  admin: string
  store: string
  rateLimits: string
  redis: string
  providers: string[]
  metrics: string
  tracing: string
  accessLog: string
}


/** A URL as it may be printed: user and password taken out. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url)
    u.username = ''
    u.password = ''
    return u.toString()
  } catch {
    return '(invalid URL)'
  }
}

/** `host:port` of a Redis URL (no user, password or database number). */
function redisHost(url: string): string {
  try {
    const u = new URL(url)
    return `${u.hostname}:${u.port || '6379'}`
  } catch {
    return '(invalid URL)'
  }
}

/** The store gw really uses (PostgreSQL when GW_DATABASE_URL is set), named without credentials. */
function storeName(config: Config): string {
  if (!config.databaseUrl) return `sqlite ${config.dbPath === ':memory:' ? ':memory:' : resolve(config.dbPath)}`
  const { hostPort, database } = databaseTarget(config.databaseUrl)
  return `postgres ${hostPort}/${database}`
}

export function startupSummary(config: Config, facts: StartupFacts): StartupSummary {
  const adminBase = facts.adminUrl ?? facts.url
  const metrics =
    config.metrics === 'off'
      ? 'off'
      : config.metrics === 'public'
        ? `${facts.url}/metrics (public)`
        : config.adminToken
          ? `${adminBase}/metrics (admin token)`
          : 'off until GW_ADMIN_TOKEN is set (or GW_METRICS=public)'
  return {
    time: new Date().toISOString(),
    msg: 'gw started',
    address: facts.url,
    admin: !config.adminToken ? 'off (GW_ADMIN_TOKEN unset)' : facts.adminUrl ? `${facts.adminUrl} (its own listener)` : `${facts.url}/admin`,
    store: storeName(config),
    // With Redis, limits and budgets are shared by every instance (while it is unreachable, each counts on its own).
    rateLimits: config.redisUrl ? `redis ${redisHost(config.redisUrl)}` : 'in memory (this instance)',
    redis: config.redisUrl ? `${redisHost(config.redisUrl)} (key prefix ${config.redisPrefix}${config.redisRequired ? ', required' : ''})` : 'not used',
    providers: facts.providers,
    metrics,
    tracing: config.otel ? `OTLP ${config.otel.protocol} to ${withoutCredentials(config.otel.tracesUrl)}` : 'off',
    accessLog: config.logFormat,
  }
}

/** The hint printed when no provider can be reached yet. */
function noProviderHint(url: string, adminApi: boolean): string {
  const vars = PROVIDER_IDS.map((p) => PROVIDER_KEY_VARIABLES[p]).join(', ')
  // The admin API exists only with GW_ADMIN_TOKEN: without it, the CLI is the run-time way.
  const atRunTime = adminApi
    ? `curl -X PUT ${url}/admin/orgs/default/providers/openai -H "Authorization: Bearer $GW_ADMIN_TOKEN" -d '{"apiKey":"sk-…"}'`
    : `OPENAI_API_KEY=sk-… ${GW_COMMAND} provider set openai (on the same database)`
  return `no provider key is configured yet for the "default" org, so its chat requests will fail. Set one of ${vars} and restart, or add one at run time: ${atRunTime}`
}

/** The summary as lines to print, in the configured format. */
export function startupLines(config: Config, s: StartupSummary): string[] {
  const hint = s.providers.length ? undefined : noProviderHint(s.address, config.adminToken !== undefined)
  if (config.logFormat === 'json') return [JSON.stringify(hint ? { ...s, warning: hint } : s)]
  const lines = [
    `gw: listening on ${s.address}`,
    `gw: admin API ${s.admin}`,
    `gw: store ${s.store}; rate limits ${s.rateLimits}`,
    `gw: providers: ${s.providers.length ? s.providers.join(', ') : 'none'}`,
    `gw: metrics ${s.metrics}; tracing ${s.tracing}; access log ${s.accessLog}`,
  ]
  if (hint) lines.push(`gw: ${hint}`)
  return lines
}
