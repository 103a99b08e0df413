// Reads gw's configuration from the environment (PRODUCT §2), with CLI flags overriding: the settings of src/settings.ts, checked together.

import { secretArg } from './cli/args'
import { PRESET_NAMES, PRESETS, type PresetName } from './providers/openai-compatible'
import { PROVIDER_IDS, type ProviderId } from './providers/provider-id'
import { type AnySetting, type Env, flagOf, readSettings, SETTINGS, type SettingValues, setText } from './settings'

/** The settings folded into the Config fields below them: the admin listener's address, and one of each per provider. */
type Folded = 'adminHost' | 'adminPort' | `${ProviderId | PresetName}BaseUrl` | `${ProviderId | PresetName}ApiKey`

/** gw's configuration: every setting of src/settings.ts, with the per-provider ones and the admin listener folded together. */
export type Config = Omit<SettingValues, Folded> & {
  /** A listener of its own for /admin, /metrics (and the dashboard): the public one then serves only the client API. */
  adminListener: { host: string; port: number } | undefined
  baseUrls: Record<ProviderId, string>
  /** Provider keys of the `default` org, from OPENAI_API_KEY etc. */
  envProviderKeys: Partial<Record<ProviderId, string>>
  /** OpenAI-compatible presets turned on for the `default` org by their variables (PRODUCT §17). */
  envPresets: { name: PresetName; baseUrl: string; apiKey: string }[]
  /** NODE_ENV=development (`npm run dev`): the dashboard is bundled on request, with hot reload. */
  dev: boolean
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

export { DEFAULT_PROMPTS_DIR, type Env } from './settings'

const ALL_SETTINGS = Object.values(SETTINGS) as AnySetting[]

/** CLI flag → the setting it overrides. */
const FLAGS = new Map(ALL_SETTINGS.flatMap((s) => {
  const flag = flagOf(s)
  return flag ? [[flag, s] as const] : []
}))

/** Every GW_* variable gw reads (test/unit/known-settings.test.ts). */
export const KNOWN_SETTINGS: ReadonlySet<string> = new Set(ALL_SETTINGS.map((s) => s.env).filter((e) => e.startsWith('GW_')))

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
export const CONFIG_FLAGS: ReadonlySet<string> = new Set(FLAGS.keys())

/** The environment variable holding each provider's key (the `default` org's, and `gw provider set`'s). */
export const PROVIDER_KEY_VARIABLES = Object.fromEntries(PROVIDER_IDS.map((p) => [p, SETTINGS[`${p}ApiKey`].env])) as Record<ProviderId, string>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Splits `--name value` / `--name=value` configuration flags out of argv; returns env overrides and the rest. */
export function parseFlags(argv: readonly string[]): { overrides: Env; rest: string[] } {
  const overrides: Env = {}
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
    const s = m ? FLAGS.get(m[1] as string) : undefined
    if (!m || !s) {
      rest.push(arg)
      continue
    }
    const value = m[2] ?? argv[++i]
    if (value === undefined) throw new ConfigError(`flag --${m[1]} needs a value`)
    try {
      overrides[s.env] = s.kind.secret ? secretArg(m[1] as string, value, `set ${s.env}`) : value
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
  const s = readSettings(env, problems)
  const { adminHost, adminPort, ...rest } = s

  if (s.databaseUrl !== undefined && s.secret === undefined && !opts.secretOptional)
    problems.push(`${SETTINGS.secret.env} must be set with ${SETTINGS.databaseUrl.env}: every instance must seal and open provider keys with the same secret`)
  if (setText(env, SETTINGS.adminHost) !== undefined && setText(env, SETTINGS.adminPort) === undefined)
    problems.push(`${SETTINGS.adminHost.env} needs ${SETTINGS.adminPort.env} (the admin listener is separate only when it has a port)`)
  if (adminPort !== undefined && adminPort !== 0 && adminPort === s.port)
    problems.push(`${SETTINGS.adminPort.env} (${adminPort}) must differ from ${SETTINGS.port.env}: the admin listener is a second one`)
  const sso = [SETTINGS.uiOidcIssuer, SETTINGS.uiOidcClientId, SETTINGS.uiOidcClientSecret]
  const ssoSet = sso.filter((x) => setText(env, x) !== undefined)
  if (ssoSet.length && ssoSet.length < sso.length)
    problems.push(`dashboard single sign-on needs ${sso.map((x) => x.env).join(', ')} together; missing: ${sso.filter((x) => !ssoSet.includes(x)).map((x) => x.env).join(', ')}`)
  if (s.maxInflightBodyBytes < s.maxBodyBytes)
    problems.push(`${SETTINGS.maxInflightBodyBytes.env} (${s.maxInflightBodyBytes}) must be at least ${SETTINGS.maxBodyBytes.env} (${s.maxBodyBytes}), or no body of the largest size is ever taken`)

  const envProviderKeys: Partial<Record<ProviderId, string>> = {}
  for (const p of PROVIDER_IDS) {
    const key = s[`${p}ApiKey`]
    if (key) envProviderKeys[p] = key
  }
  const envPresets: Config['envPresets'] = []
  for (const name of PRESET_NAMES) {
    const url = s[`${name}BaseUrl`]
    const key = s[`${name}ApiKey`]
    // A local server is on when its base URL (or a key) is set; a remote one when its key is.
    if (key || (PRESETS[name].local && url)) envPresets.push({ name, baseUrl: url ?? PRESETS[name].baseUrl, apiKey: key ?? '' })
  }
  const config: Config = {
    ...omitFolded(rest),
    envPresets,
    adminListener: adminPort === undefined ? undefined : { host: adminHost, port: adminPort },
    baseUrls: Object.fromEntries(PROVIDER_IDS.map((p) => [p, s[`${p}BaseUrl`]])) as Record<ProviderId, string>,
    envProviderKeys,
    dev: env.NODE_ENV === 'development',
    otel: otelConfig(env, problems),
  }
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
  return Object.freeze(config)
}

/** The settings without the per-provider ones (folded into `baseUrls` and `envProviderKeys`). */
function omitFolded<T extends object>(values: T): Omit<T, Folded> {
  const perProvider = new Set([...PROVIDER_IDS, ...PRESET_NAMES].flatMap((p) => [`${p}BaseUrl`, `${p}ApiKey`]))
  return Object.fromEntries(Object.entries(values).filter(([k]) => !perProvider.has(k))) as Omit<T, Folded>
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
