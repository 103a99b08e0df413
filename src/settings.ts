// Every setting gw reads from the environment, declared once: variable, flag, kind, default, help line. The Config type, flags, reading and --help come from this table.

import { dirname, join } from 'node:path'
import { MIN_SECRET_CHARS } from './crypto/secret-box'
import { trustedProxyProblem } from './http/client-address'
import { corsOriginProblem } from './http/cors'
import { BUN_DEFAULT_UPSTREAM_POOL, upstreamPoolSize } from './policy/stream-slots'
import { type Preset, PRESETS, type PresetName } from './providers/openai-compatible'
import { bool, httpUrl, int, type Kind, list, num, oneOf, readAs, secret, text } from './setting-kinds'

/** The settings read before this one, for a default that follows another setting. */
type Earlier = Readonly<Record<string, unknown>>

export interface Setting<T, D extends T | undefined> {
  /** The environment variable; an empty one counts as unset. */
  env: string
  /** `--<env without GW_, lowercase, "-" for "_">` overrides the variable (not for secrets and URLs that may hold passwords: `ps` shows argv). */
  flag: boolean
  kind: Kind<T>
  /** The value when unset (undefined: the setting stays unset), or a function of the settings above it. */
  default: D | ((earlier: Earlier) => D)
  /** How --help states a default computed by a function. */
  defaultText?: string
  /** One line for --help. */
  help: string
}

/** Declares one setting; the kind fixes the type its default must have. */
const setting = <T, D extends T | undefined>(s: Setting<T, D>): Setting<T, D> => s

export const DEFAULT_PROMPTS_DIR = './prompts'
/** An operator-chosen GW_SERVICE_KEY must be at least this long. */
const MIN_SERVICE_KEY_CHARS = 32

const baseUrl = (env: string, url: string, api: string) =>
  setting({ env, flag: true, kind: httpUrl(), default: url, help: `base URL of ${api} (an org's provider record may override it)` })
const providerKey = (env: string, provider: string) =>
  setting({ env, flag: false, kind: secret('an API key', () => []), default: undefined, help: `${provider} API key of the \`default\` org` })

type PresetSettings = { [K in PresetName as `${K}BaseUrl`]: Setting<string, string | undefined> } & {
  [K in PresetName as `${K}ApiKey`]: Setting<string, undefined>
}
/**
 * The OpenAI-compatible presets (PRODUCT §17): `GW_<NAME>_BASE_URL` and `<NAME>_API_KEY` set one for the
 * `default` org at start — a local one when its base URL (or key) is set, a remote one when its key is.
 */
const presetSettings = Object.fromEntries(
  (Object.entries(PRESETS) as [PresetName, Preset][]).flatMap(([name, p]) => [
    [
      `${name}BaseUrl`,
      p.local
        ? setting({ env: `GW_${name.toUpperCase()}_BASE_URL`, flag: true, kind: httpUrl(), default: undefined, help: `base URL of ${p.label} (usually ${p.baseUrl}); setting it turns the \`${name}\` provider on for the \`default\` org` })
        : baseUrl(`GW_${name.toUpperCase()}_BASE_URL`, p.baseUrl, `${p.label}'s OpenAI-compatible API`),
    ],
    [`${name}ApiKey`, providerKey(p.keyEnv, p.label)],
  ]),
) as PresetSettings

/** Keyed by the Config field each one fills; in the order --help lists them (a default may read the ones above it). */
export const SETTINGS = {
  host: setting({ env: 'GW_HOST', flag: true, kind: text('a host name or address'), default: '127.0.0.1', help: 'address the API listens on' }),
  port: setting({ env: 'GW_PORT', flag: true, kind: int(0, 65535), default: 8787, help: 'port the API listens on (0: any free port)' }),
  dbPath: setting({ env: 'GW_DB', flag: true, kind: text('a file path, or :memory:'), default: './data/gw.db', help: 'SQLite database file' }),
  adminToken: setting({
    env: 'GW_ADMIN_TOKEN',
    flag: true,
    kind: secret('16+ characters', (v) => (v.length < 16 ? ['must be at least 16 characters'] : [])),
    default: undefined,
    help: 'enables the admin API and the dashboard (Authorization: Bearer …)',
  }),
  adminHost: setting({ env: 'GW_ADMIN_HOST', flag: true, kind: text('a host name or address'), default: '127.0.0.1', help: 'address of the admin listener (needs GW_ADMIN_PORT)' }),
  adminPort: setting({
    env: 'GW_ADMIN_PORT',
    flag: true,
    kind: int(0, 65535),
    default: undefined,
    help: 'a listener of its own for /admin, /metrics and the dashboard; the public one then serves only the client API',
  }),
  secret: setting({
    env: 'GW_SECRET',
    flag: false,
    kind: secret(`${MIN_SECRET_CHARS}+ characters`, (v) =>
      v.length < MIN_SECRET_CHARS ? [`must be at least ${MIN_SECRET_CHARS} characters (it derives the key that encrypts provider keys)`] : [],
    ),
    default: undefined,
    defaultText: 'generated into <db dir>/gw.secret',
    help: 'encrypts provider keys and signing secrets at rest',
  }),
  envServiceKey: setting({
    env: 'GW_SERVICE_KEY',
    flag: false,
    kind: secret(`gw_sk_…, ${MIN_SERVICE_KEY_CHARS}+ characters`, (v) => [
      ...(v.length < MIN_SERVICE_KEY_CHARS ? [`must be at least ${MIN_SERVICE_KEY_CHARS} characters (gw's own keys have 50)`] : []),
      // The prefix is how gw tells its keys from OIDC tokens when a client (every OpenAI SDK) sends Bearer.
      ...(v.startsWith('gw_sk_') ? [] : ['must start with "gw_sk_" (how gw tells its keys from OIDC tokens sent as Bearer)']),
    ]),
    default: undefined,
    help: 'a service key of your choice for the `default` org (else one is generated once)',
  }),
  openaiBaseUrl: baseUrl('GW_OPENAI_BASE_URL', 'https://api.openai.com/v1', "OpenAI's API"),
  anthropicBaseUrl: baseUrl('GW_ANTHROPIC_BASE_URL', 'https://api.anthropic.com/v1', "Anthropic's API"),
  googleBaseUrl: baseUrl('GW_GOOGLE_BASE_URL', 'https://generativelanguage.googleapis.com/v1beta', "Google's Gemini API"),
  mistralBaseUrl: baseUrl('GW_MISTRAL_BASE_URL', 'https://api.mistral.ai/v1', "Mistral's API"),
  openaiApiKey: providerKey('OPENAI_API_KEY', 'OpenAI'),
  anthropicApiKey: providerKey('ANTHROPIC_API_KEY', 'Anthropic'),
  googleApiKey: providerKey('GEMINI_API_KEY', 'Google Gemini'),
  mistralApiKey: providerKey('MISTRAL_API_KEY', 'Mistral'),
  ...presetSettings,
  upstreamTimeoutMs: setting({
    env: 'GW_UPSTREAM_TIMEOUT_MS',
    flag: true,
    kind: int(1, 3_600_000),
    default: 60_000,
    help: 'time for upstream headers and for the first token; longest silence inside a stream',
  }),
  clientReadTimeoutMs: setting({
    env: 'GW_CLIENT_READ_TIMEOUT_MS',
    flag: true,
    kind: int(100, 3_600_000),
    default: 30_000,
    help: 'a stream whose client reads nothing for this long is ended and its upstream released',
  }),
  maxBodyBytes: setting({ env: 'GW_MAX_BODY_BYTES', flag: true, kind: int(1024, 1_073_741_824), default: 10_485_760, help: 'larger request bodies get 413' }),
  maxInflightBodyBytes: setting({
    env: 'GW_MAX_INFLIGHT_BODY_BYTES',
    flag: true,
    kind: int(1024, 68_719_476_736),
    // 256 MiB, or one body of the largest size when GW_MAX_BODY_BYTES is set higher.
    default: (earlier) => Math.max(268_435_456, earlier.maxBodyBytes as number),
    defaultText: '268435456 (or GW_MAX_BODY_BYTES if larger)',
    help: 'bytes of request bodies all requests in flight may hold together; a body that does not fit gets 503',
  }),
  upstreamPool: setting({
    env: 'BUN_CONFIG_MAX_HTTP_REQUESTS',
    flag: false,
    kind: readAs('a whole number from 1 to 65535 (else Bun uses 256)', upstreamPoolSize),
    default: BUN_DEFAULT_UPSTREAM_POOL,
    help: 'upstream requests in flight at once, read by Bun at start; open streams may take three quarters of it',
  }),
  drainMs: setting({
    env: 'GW_DRAIN_MS',
    flag: true,
    kind: int(0, 600_000),
    default: 10_000,
    help: 'on SIGTERM/SIGINT, how long requests in flight may run before open streams are ended',
  }),
  jwksRefreshMs: setting({
    env: 'GW_JWKS_REFRESH_MS',
    flag: true,
    kind: int(0, 3_600_000),
    default: 30_000,
    help: "least time between two fetches of an OIDC issuer's JWKS caused by an unknown key id",
  }),
  promptsDir: setting({ env: 'GW_PROMPTS_DIR', flag: true, kind: text('a folder'), default: DEFAULT_PROMPTS_DIR, help: 'prompt files (prompts as code), loaded at start' }),
  catalogPath: setting({ env: 'GW_CATALOG', flag: true, kind: text('a JSON file'), default: undefined, help: 'your own model catalog, merged over the built-in one' }),
  configFile: setting({ env: 'GW_CONFIG', flag: true, kind: text('a YAML file'), default: undefined, help: 'provider keys and routes applied at start' }),
  logBodies: setting({ env: 'GW_LOG_BODIES', flag: true, kind: bool(), default: true, help: 'keep request and response bodies on log entries' }),
  logBodyMaxBytes: setting({
    env: 'GW_LOG_BODY_MAX_BYTES',
    flag: true,
    kind: int(256, 1_073_741_824),
    default: 65_536,
    help: 'each stored body at most this size; a larger one is stored as a truncated preview',
  }),
  cacheMaxOrgBytes: setting({
    env: 'GW_CACHE_MAX_ORG_BYTES',
    flag: true,
    kind: int(1024, 1_099_511_627_776),
    default: 104_857_600,
    help: "the response cache keeps at most this many bytes of answers per org (its oldest go first)",
  }),
  logRetentionDays: setting({
    env: 'GW_LOG_RETENTION_DAYS',
    flag: true,
    kind: num(0, 36_500),
    default: 30,
    help: 'raw log entries older than this many days are pruned (0 keeps everything)',
  }),
  auditRetentionDays: setting({
    env: 'GW_AUDIT_RETENTION_DAYS',
    flag: true,
    kind: num(0, 36_500),
    default: 0,
    help: 'audit log entries older than this many days are pruned (0, the default, keeps them forever)',
  }),
  logReadsPerMinute: setting({
    env: 'GW_LOG_READS_PER_MINUTE',
    flag: true,
    kind: int(0, 1_000_000),
    default: 120,
    help: 'log pages and usage reports (GET /v1/logs, /v1/usage) each org may read per minute (0: no limit)',
  }),
  errorFormat: setting({
    env: 'GW_ERROR_FORMAT',
    flag: true,
    kind: oneOf(['gw', 'openai'] as const),
    default: undefined,
    help: "the shape of error bodies unless a request's x-gw-error-format asks otherwise; unset: OpenAI's for the OpenAI SDKs, gw's for the rest",
  }),
  corsOrigins: setting({
    env: 'GW_CORS_ORIGINS',
    flag: true,
    kind: list('comma-separated origins, * for any', { normalise: (o) => o.replace(/\/+$/, '').toLowerCase(), check: corsOriginProblem }),
    default: [],
    help: 'origins browsers may call gw from (preflights answered, x-gw-* headers exposed)',
  }),
  publicUrl: setting({
    env: 'GW_PUBLIC_URL',
    flag: true,
    kind: httpUrl(),
    default: undefined,
    help: "gw's address as users' browsers reach it, for the MCP gateway's OAuth callback and the dashboard's single sign-on (unset: the address the request came to)",
  }),
  uiOidcIssuer: setting({
    env: 'GW_UI_OIDC_ISSUER',
    flag: true,
    kind: httpUrl(),
    default: undefined,
    help: "single sign-on to the dashboard: the OIDC provider's issuer URL (with the client id and secret below)",
  }),
  uiOidcClientId: setting({ env: 'GW_UI_OIDC_CLIENT_ID', flag: true, kind: text('a client id'), default: undefined, help: "the dashboard's client id at the OIDC provider" }),
  uiOidcClientSecret: setting({
    env: 'GW_UI_OIDC_CLIENT_SECRET',
    flag: false,
    kind: secret('the client secret', () => []),
    default: undefined,
    help: "the dashboard's client secret at the OIDC provider",
  }),
  uiOidcDefaultRole: setting({
    env: 'GW_UI_OIDC_DEFAULT_ROLE',
    flag: true,
    kind: oneOf(['owner', 'admin', 'viewer'] as const),
    default: undefined,
    help: 'single sign-on by an unknown (verified) email creates a user with this role (unset: refused)',
  }),
  uiOidcDefaultOrgs: setting({
    env: 'GW_UI_OIDC_DEFAULT_ORGS',
    flag: true,
    kind: list('comma-separated org ids'),
    default: ['default'],
    help: 'the orgs of a user single sign-on creates (with GW_UI_OIDC_DEFAULT_ROLE)',
  }),
  trustedProxies: setting({
    env: 'GW_TRUSTED_PROXIES',
    flag: true,
    kind: list('comma-separated IPs or CIDR ranges', { check: trustedProxyProblem }),
    default: [],
    help: "reverse proxies whose X-Forwarded-For names the client (else the socket's peer is the client)",
  }),
  metrics: setting({
    env: 'GW_METRICS',
    flag: true,
    kind: oneOf(['admin', 'public', 'off'] as const),
    default: 'admin',
    help: 'GET /metrics (Prometheus): behind the admin token, open, or off',
  }),
  metricsOrgLabel: setting({ env: 'GW_METRICS_ORG_LABEL', flag: true, kind: bool(), default: false, help: 'an org label on the request, token and cost metrics' }),
  logFormat: setting({
    env: 'GW_LOG_FORMAT',
    flag: true,
    kind: oneOf(['json', 'pretty', 'off'] as const),
    default: () => (process.stdout.isTTY ? 'pretty' : 'off'),
    defaultText: 'pretty on a terminal, else off',
    help: 'access log lines on stdout: one JSON object per request, a short line, or none',
  }),
  traceContent: setting({ env: 'GW_TRACE_CONTENT', flag: true, kind: bool(), default: false, help: 'put prompts and answers on trace spans' }),
  databaseUrl: setting({
    env: 'GW_DATABASE_URL',
    flag: false,
    kind: text('postgres://…', (v) => (/^postgres(ql)?:\/\/./.test(v) ? [] : ['must be a postgres:// (or postgresql://) URL'])),
    default: undefined,
    help: 'PostgreSQL instead of the SQLite file, for several instances as one gateway',
  }),
  redisUrl: setting({
    env: 'GW_REDIS_URL',
    flag: false,
    kind: text('redis://…', (v) => (/^rediss?:\/\/./.test(v) ? [] : ['must be a redis:// (or rediss://) URL'])),
    default: undefined,
    help: 'counters, breaker state and change notices shared by every instance',
  }),
  redisRequired: setting({
    env: 'GW_REDIS_REQUIRED',
    flag: true,
    kind: bool(),
    default: false,
    help: 'limited requests get 503 while Redis is unreachable (else local counters)',
  }),
  redisPrefix: setting({ env: 'GW_REDIS_PREFIX', flag: true, kind: text('text'), default: 'gw:', help: 'prefix of every Redis key and channel (several gateways can share one Redis)' }),
  spoolDir: setting({
    env: 'GW_SPOOL_DIR',
    flag: true,
    kind: text('a folder'),
    default: (earlier) => {
      const db = earlier.dbPath as string
      return join(db === ':memory:' ? './data' : dirname(db), 'spool')
    },
    defaultText: '<db dir>/spool',
    help: 'where log entries wait while the database is unreachable',
  }),
}

export type AnySetting = (typeof SETTINGS)[keyof typeof SETTINGS]

/** The value a setting holds: its kind's type, or undefined too when it has no default. */
type ValueOf<S> = S extends { kind: Kind<infer T>; default: infer D } ? (undefined extends D ? T | undefined : T) : never

/** Every setting's value, keyed as in SETTINGS. */
export type SettingValues = { [K in keyof typeof SETTINGS]: ValueOf<(typeof SETTINGS)[K]> }

/** The flag of a setting that has one (`GW_LOG_FORMAT` → `log-format`). */
export const flagOf = (s: AnySetting): string | undefined => (s.flag ? s.env.replace(/^GW_/, '').toLowerCase().replaceAll('_', '-') : undefined)

/** The process environment, or the variables a test or command passes instead. */
export type Env = Record<string, string | undefined>

/** A setting's variable as set, or undefined when it is unset or empty (an empty variable counts as unset). */
export function setText(env: Readonly<Env>, s: { env: string }): string | undefined {
  const raw = env[s.env]
  return raw === undefined || raw === '' ? undefined : raw
}

/**
 * Reads every setting from `env`; each invalid value is a line pushed to `problems` and leaves the
 * setting at its default.
 */
export function readSettings(env: Readonly<Env>, problems: string[]): SettingValues {
  const values: Record<string, unknown> = {}
  for (const [key, s] of Object.entries(SETTINGS) as [string, Setting<unknown, unknown>][]) {
    const raw = setText(env, s)
    const read = raw === undefined ? undefined : s.kind.read(raw, s.env, problems)
    values[key] = read !== undefined ? read : typeof s.default === 'function' ? (s.default as (e: Earlier) => unknown)(values) : s.default
  }
  return values as SettingValues
}

/** How --help (and the README's table) states a setting's default. */
export function defaultText(s: AnySetting): string {
  if (s.defaultText) return s.defaultText
  const d: unknown = s.default
  if (d === undefined || (Array.isArray(d) && d.length === 0)) return 'unset'
  return Array.isArray(d) ? d.join(',') : String(d)
}

/** Two lines per setting for --help: flag and variable, then what it does, its kind and default. */
export const SETTINGS_HELP: string = (Object.values(SETTINGS) as AnySetting[])
  .map((s) => {
    const flag = flagOf(s)
    const usage = flag ? `--${flag} ${s.kind.secret ? '-' : 'VALUE'}` : '(no flag)'
    return `  ${usage.padEnd(34)}${s.env}\n      ${s.help} [${s.kind.describe}; default: ${defaultText(s)}]`
  })
  .join('\n')
